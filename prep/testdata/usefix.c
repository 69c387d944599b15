/* A program that uses libfix.so. */
int lib_add(int a, int b);

int main(int argc, char **argv)
{
	(void)argv;
	return lib_add(argc, 1) == 0;
}
