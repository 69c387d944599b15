// The program's own measure of its calls (main.go), kept in C so that
// both halves write it: one line a function at exit,
//
//	own NAME calls C in I out O kin KI kout KO desc D
//
// as testdata/progs/c/timing.c prints it.

#ifndef GOCGO_OWN_H
#define GOCGO_OWN_H

enum { O_RUN, O_C_OUTER, O_GO_CALLBACK, O_GO_WORK, O_C_LEAF, O_C_WORK, N_OWN };

struct own {
	long calls, in, out, kin, kout, desc;
};

extern struct own own[N_OWN];
/* last is what the measured call that returned last took: its in, and
 * the gaps below it. */
struct last {
	long in, desc;
};

extern struct last last;
extern long unit_ns;

void c_outer(int n);
void c_leaf(void);

#endif
