/* samename/b/util.c: called 20 times; the loop's body runs 5 times a call. */
int util_b(int x)
{
    int s = 0;
    for (int i = 0; i < 5; i++)
        s += x - i;
    return s;
}
