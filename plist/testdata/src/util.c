int util(int x)
{
	return x + 1;
}