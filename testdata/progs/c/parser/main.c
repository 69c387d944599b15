/* main.c - the parser's program: parse() reads "a+b+c", calling
   parse_item() five times, twice for a '+'. */
int parse(const char *s);

int main(void)
{
	return parse("a+b+c") == 2 ? 0 : 1;
}
