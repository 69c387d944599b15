/* parse.y - the grammar of parse.c, which is what bison makes of it:
   its C code is in parse.c, named there by #line "parse.y". */
%{
int parse_item(int c);
%}
%%
list: /* empty */ | list ITEM ;
%%
int parse_item(int c)
{
	if (c == '+')
		return 1;
	return 0;
}
