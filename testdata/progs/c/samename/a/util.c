/* samename/a/util.c: called 10 times; the loop's body runs 3 times a call. */
int util_a(int x)
{
    int s = 0;
    for (int i = 0; i < 3; i++)
        s += x + i;
    return s;
}
