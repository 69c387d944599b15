package plist

import "github.com/sourceprofiler/sprof/datafile"

// The timing runs made with /AT whose outputs are in ../golden/ftime
// (ft-at*): ftime.c's functions with their times, and their stacks with
// theirs. The original printed milliseconds with three decimals and
// percentages with one; the nanoseconds here were found by a search (from
// the printed values, moved by a few nanoseconds at a time) such that
// every figure of the text and tab outputs of each run prints as the
// golden's: the stacks' times, their sums in the caller trees, the
// percentages of the functions' own times, the time in the module. A
// function's times are the sums of its stacks'.

// tst is an attribution stack of a timing run: st with the stack's
// function time and function+child time, in nanoseconds.
type tst struct {
	fn          string
	callers     []string
	hits        uint64
	time, child int64
}

// timedProgram is a timing run made with /AT: the program, whose
// functions' times are those of one run, and its stacks, in recorded
// order.
type timedProgram struct {
	program
	stacks []tst
}

// withTimedStacks returns the pbt of p's run (or runs: the program's hits
// are those of one run, its times and its stacks those of all).
func withTimedStacks(p timedProgram, runs ...datafile.Run) func(string) *datafile.Merged {
	stacks := make([]st, len(p.stacks))
	for k, s := range p.stacks {
		stacks[k] = st{s.fn, s.callers, s.hits}
	}
	build := withStacks(p.program, datafile.FuncTiming, stacks, runs...)
	return func(dir string) *datafile.Merged {
		m := build(dir)
		for k, s := range p.stacks {
			m.Stats.Stacks[k].Time, m.Stats.Stacks[k].ChildTime = s.time, s.child
		}
		return m
	}
}

// ftimeAT is ftime prepared with /AT, with the times of its run in ftime/ft-atdefault.
var ftimeAT = timedProgram{
	program: program{
		modules: []string{"ftime.exe"},
		funcs: []fn{
			{0, "_spin", "ftime.obj", 11, 6971044, 6970723},
			{0, "_leaf", "ftime.obj", 5, 999, 2752794},
			{0, "_mid", "ftime.obj", 2, 812, 1629009},
			{0, "_short_work", "ftime.obj", 3, 884, 877018},
			{0, "_long_work", "ftime.obj", 1, 930, 3615342},
			{0, "_caller_a", "ftime.obj", 1, 526, 1372949},
			{0, "_caller_b", "ftime.obj", 2, 320, 1111388},
			{0, "_main", "ftime.obj", 1, 17399, 6992901},
		},
		depth: 5,
		total: 7345000,
		out:   352000,
	},
	stacks: []tst{
		{"_spin", []string{"_main", "_long_work"}, 1, 2805337, 2805427},
		{"_spin", []string{"_caller_b", "_leaf"}, 2, 1109269, 1109126},
		{"_spin", []string{"_main", "_short_work"}, 3, 875998, 875899},
		{"_spin", []string{"_caller_a", "_leaf"}, 1, 552411, 552079},
		{"_spin", []string{"_mid", "_leaf"}, 1, 549583, 549897},
		{"_spin", []string{"_mid", "_leaf"}, 1, 539520, 539522},
		{"_spin", []string{"_long_work", "_mid"}, 1, 269531, 269736},
		{"_spin", []string{"_caller_a", "_mid"}, 1, 269395, 269037},
		{"_leaf", []string{"_main", "_caller_b"}, 2, 537, 1109837},
		{"_leaf", []string{"_main", "_caller_a"}, 1, 231, 553281},
		{"_leaf", []string{"_long_work", "_mid"}, 1, 154, 539576},
		{"_leaf", []string{"_caller_a", "_mid"}, 1, 77, 550100},
		{"_mid", []string{"_main", "_caller_a"}, 1, 406, 818932},
		{"_mid", []string{"_main", "_long_work"}, 1, 406, 810077},
		{"_short_work", []string{"", "_main"}, 3, 884, 877018},
		{"_long_work", []string{"", "_main"}, 1, 930, 3615342},
		{"_caller_a", []string{"", "_main"}, 1, 526, 1372949},
		{"_caller_b", []string{"", "_main"}, 2, 320, 1111388},
		{"_main", []string{""}, 1, 17399, 6992901},
	},
}

// ftimeAT2 is ftimeAT after a second run merged (ftime/ft-atdefault-run2): the stacks with two callers are kept per run.
var ftimeAT2 = timedProgram{
	program: program{
		modules: []string{"ftime.exe"},
		funcs: []fn{
			{0, "_spin", "ftime.obj", 11, 13798287, 13798428},
			{0, "_leaf", "ftime.obj", 5, 2456, 5476363},
			{0, "_mid", "ftime.obj", 2, 1170, 3261261},
			{0, "_short_work", "ftime.obj", 3, 1081, 1723025},
			{0, "_long_work", "ftime.obj", 1, 1000, 7145101},
			{0, "_caller_a", "ftime.obj", 1, 905, 2743995},
			{0, "_caller_b", "ftime.obj", 2, 1014, 2193005},
			{0, "_main", "ftime.obj", 1, 25966, 13832020},
		},
		depth: 5,
		total: 14486000,
		out:   654000,
	},
	stacks: []tst{
		{"_spin", []string{"_main", "_long_work"}, 1, 2804790, 2805299},
		{"_spin", []string{"_main", "_long_work"}, 1, 2714426, 2713615},
		{"_spin", []string{"_caller_b", "_leaf"}, 2, 1109251, 1109481},
		{"_spin", []string{"_caller_b", "_leaf"}, 2, 1082364, 1082204},
		{"_spin", []string{"_main", "_short_work"}, 3, 875963, 876142},
		{"_spin", []string{"_main", "_short_work"}, 3, 845128, 845206},
		{"_spin", []string{"_caller_a", "_leaf"}, 1, 556301, 555737},
		{"_spin", []string{"_caller_a", "_leaf"}, 1, 551754, 552329},
		{"_spin", []string{"_mid", "_leaf"}, 1, 550180, 549876},
		{"_spin", []string{"_mid", "_leaf"}, 1, 545770, 546304},
		{"_spin", []string{"_mid", "_leaf"}, 1, 540317, 539866},
		{"_spin", []string{"_mid", "_leaf"}, 1, 537915, 538308},
		{"_spin", []string{"_long_work", "_mid"}, 1, 276527, 276536},
		{"_spin", []string{"_long_work", "_mid"}, 1, 269764, 269912},
		{"_spin", []string{"_caller_a", "_mid"}, 1, 269440, 269290},
		{"_spin", []string{"_caller_a", "_mid"}, 1, 268397, 268323},
		{"_leaf", []string{"_main", "_caller_b"}, 2, 716, 1110122},
		{"_leaf", []string{"_main", "_caller_b"}, 2, 410, 1082401},
		{"_leaf", []string{"_main", "_caller_a"}, 1, 306, 552647},
		{"_leaf", []string{"_caller_a", "_mid"}, 1, 306, 546816},
		{"_leaf", []string{"_main", "_caller_a"}, 1, 205, 556307},
		{"_leaf", []string{"_long_work", "_mid"}, 1, 205, 538809},
		{"_leaf", []string{"_long_work", "_mid"}, 1, 204, 539691},
		{"_leaf", []string{"_caller_a", "_mid"}, 1, 104, 549570},
		{"_mid", []string{"_main", "_caller_a"}, 1, 360, 815400},
		{"_mid", []string{"_main", "_long_work"}, 1, 270, 816397},
		{"_mid", []string{"_main", "_caller_a"}, 1, 270, 819397},
		{"_mid", []string{"_main", "_long_work"}, 1, 270, 810067},
		{"_short_work", []string{"", "_main"}, 6, 1081, 1723025},
		{"_long_work", []string{"", "_main"}, 2, 1000, 7145101},
		{"_caller_a", []string{"", "_main"}, 2, 905, 2743995},
		{"_caller_b", []string{"", "_main"}, 4, 1014, 2193005},
		{"_main", []string{""}, 2, 25966, 13832020},
	},
}

// ftimeAT1 is ftime prepared with /AT /STACK 1 (ftime/ft-at1).
var ftimeAT1 = timedProgram{
	program: program{
		modules: []string{"ftime.exe"},
		funcs: []fn{
			{0, "_spin", "ftime.obj", 11, 6740816, 6740811},
			{0, "_leaf", "ftime.obj", 5, 1012, 2733683},
			{0, "_mid", "ftime.obj", 2, 532, 1628880},
			{0, "_short_work", "ftime.obj", 3, 989, 832048},
			{0, "_long_work", "ftime.obj", 1, 507, 3448254},
			{0, "_caller_a", "ftime.obj", 1, 189, 1377934},
			{0, "_caller_b", "ftime.obj", 2, 944, 1086884},
			{0, "_main", "ftime.obj", 1, 18000, 6762923},
		},
		depth: 5,
		total: 7123000,
		out:   361000,
	},
	stacks: []tst{
		{"_spin", []string{"_leaf"}, 5, 2732996, 2732967},
		{"_spin", []string{"_long_work"}, 1, 2641000, 2640889},
		{"_spin", []string{"_short_work"}, 3, 830805, 831001},
		{"_spin", []string{"_mid"}, 2, 536015, 535954},
		{"_leaf", []string{"_caller_b"}, 2, 368, 1086949},
		{"_leaf", []string{"_mid"}, 2, 368, 1091921},
		{"_leaf", []string{"_caller_a"}, 1, 276, 554813},
		{"_mid", []string{"_long_work"}, 1, 304, 806404},
		{"_mid", []string{"_caller_a"}, 1, 228, 822476},
		{"_short_work", []string{"_main"}, 3, 989, 832048},
		{"_long_work", []string{"_main"}, 1, 507, 3448254},
		{"_caller_a", []string{"_main"}, 1, 189, 1377934},
		{"_caller_b", []string{"_main"}, 2, 944, 1086884},
		{"_main", []string{""}, 1, 18000, 6762923},
	},
}

// ftimeAT2Levels is ftime prepared with /AT /STACK 2 (ftime/ft-at2).
var ftimeAT2Levels = timedProgram{
	program: program{
		modules: []string{"ftime.exe"},
		funcs: []fn{
			{0, "_spin", "ftime.obj", 11, 9053123, 9053255},
			{0, "_leaf", "ftime.obj", 5, 685, 2838393},
			{0, "_mid", "ftime.obj", 2, 585, 1627534},
			{0, "_short_work", "ftime.obj", 3, 566, 819443},
			{0, "_long_work", "ftime.obj", 1, 630, 5680863},
			{0, "_caller_a", "ftime.obj", 1, 555, 1467813},
			{0, "_caller_b", "ftime.obj", 2, 539, 1089322},
			{0, "_main", "ftime.obj", 1, 18015, 9074892},
		},
		depth: 5,
		total: 9422000,
		out:   347000,
	},
	stacks: []tst{
		{"_spin", []string{"_main", "_long_work"}, 1, 4859225, 4859488},
		{"_spin", []string{"_mid", "_leaf"}, 2, 1088813, 1088968},
		{"_spin", []string{"_caller_b", "_leaf"}, 2, 1088482, 1088330},
		{"_spin", []string{"_main", "_short_work"}, 3, 818552, 818815},
		{"_spin", []string{"_caller_a", "_leaf"}, 1, 659985, 659647},
		{"_spin", []string{"_caller_a", "_mid"}, 1, 270324, 269749},
		{"_spin", []string{"_long_work", "_mid"}, 1, 267742, 268258},
		{"_leaf", []string{"_main", "_caller_b"}, 2, 274, 1088750},
		{"_leaf", []string{"_caller_a", "_mid"}, 1, 137, 537380},
		{"_leaf", []string{"_main", "_caller_a"}, 1, 137, 659944},
		{"_leaf", []string{"_long_work", "_mid"}, 1, 137, 552319},
		{"_mid", []string{"_main", "_long_work"}, 1, 334, 820553},
		{"_mid", []string{"_main", "_caller_a"}, 1, 251, 806981},
		{"_short_work", []string{"", "_main"}, 3, 566, 819443},
		{"_long_work", []string{"", "_main"}, 1, 630, 5680863},
		{"_caller_a", []string{"", "_main"}, 1, 555, 1467813},
		{"_caller_b", []string{"", "_main"}, 2, 539, 1089322},
		{"_main", []string{""}, 1, 18015, 9074892},
	},
}

// ftimeAT3 is ftime prepared with /AT /STACK 3 (ftime/ft-at3).
var ftimeAT3 = timedProgram{
	program: program{
		modules: []string{"ftime.exe"},
		funcs: []fn{
			{0, "_spin", "ftime.obj", 11, 6956744, 6957182},
			{0, "_leaf", "ftime.obj", 5, 1465, 2815540},
			{0, "_mid", "ftime.obj", 2, 944, 1722444},
			{0, "_short_work", "ftime.obj", 3, 880, 840020},
			{0, "_long_work", "ftime.obj", 1, 810, 3602999},
			{0, "_caller_a", "ftime.obj", 1, 400, 1396001},
			{0, "_caller_b", "ftime.obj", 2, 414, 1121995},
			{0, "_main", "ftime.obj", 1, 8800, 6970040},
		},
		depth: 5,
		total: 7246000,
		out:   276000,
	},
	stacks: []tst{
		{"_spin", []string{"_main", "_long_work"}, 1, 2733786, 2734408},
		{"_spin", []string{"_caller_b", "_leaf"}, 2, 1120631, 1120585},
		{"_spin", []string{"_main", "_short_work"}, 3, 839351, 839025},
		{"_spin", []string{"_mid", "_leaf"}, 1, 581322, 581034},
		{"_spin", []string{"_mid", "_leaf"}, 1, 570029, 570397},
		{"_spin", []string{"_caller_a", "_leaf"}, 1, 542308, 542401},
		{"_spin", []string{"_long_work", "_mid"}, 1, 297559, 297803},
		{"_spin", []string{"_caller_a", "_mid"}, 1, 271758, 271529},
		{"_leaf", []string{"_main", "_caller_b"}, 2, 628, 1121275},
		{"_leaf", []string{"_caller_a", "_mid"}, 1, 314, 580650},
		{"_leaf", []string{"_long_work", "_mid"}, 1, 314, 571469},
		{"_leaf", []string{"_main", "_caller_a"}, 1, 209, 542146},
		{"_mid", []string{"_main", "_caller_a"}, 1, 472, 853505},
		{"_mid", []string{"_main", "_long_work"}, 1, 472, 868939},
		{"_short_work", []string{"", "_main"}, 3, 880, 840020},
		{"_long_work", []string{"", "_main"}, 1, 810, 3602999},
		{"_caller_a", []string{"", "_main"}, 1, 400, 1396001},
		{"_caller_b", []string{"", "_main"}, 2, 414, 1121995},
		{"_main", []string{""}, 1, 8800, 6970040},
	},
}

// ftimeAT4 is ftime prepared with /AT /STACK 4 (ftime/ft-at4).
var ftimeAT4 = timedProgram{
	program: program{
		modules: []string{"ftime.exe"},
		funcs: []fn{
			{0, "_spin", "ftime.obj", 11, 5956249, 5956232},
			{0, "_leaf", "ftime.obj", 5, 824, 2391130},
			{0, "_mid", "ftime.obj", 2, 408, 1421955},
			{0, "_short_work", "ftime.obj", 3, 822, 719014},
			{0, "_long_work", "ftime.obj", 1, 68, 3082112},
			{0, "_caller_a", "ftime.obj", 1, 77, 1200150},
			{0, "_caller_b", "ftime.obj", 2, 482, 957663},
			{0, "_main", "ftime.obj", 1, 6575, 5965656},
		},
		depth: 5,
		total: 6217000,
		out:   251000,
	},
	stacks: []tst{
		{"_spin", []string{"_main", "_long_work"}, 1, 2383100, 2382995},
		{"_spin", []string{"_caller_b", "_leaf"}, 2, 957065, 956996},
		{"_spin", []string{"_main", "_short_work"}, 3, 718000, 717976},
		{"_spin", []string{"_mid", "_leaf"}, 1, 490985, 491021},
		{"_spin", []string{"_caller_a", "_leaf"}, 1, 476019, 476005},
		{"_spin", []string{"_mid", "_leaf"}, 1, 466001, 466100},
		{"_spin", []string{"_caller_a", "_mid"}, 1, 233000, 233119},
		{"_spin", []string{"_long_work", "_mid"}, 1, 232079, 232020},
		{"_leaf", []string{"_main", "_caller_b"}, 2, 412, 958212},
		{"_leaf", []string{"_long_work", "_mid"}, 1, 206, 465911},
		{"_leaf", []string{"_caller_a", "_mid"}, 1, 103, 491174},
		{"_leaf", []string{"_main", "_caller_a"}, 1, 103, 475833},
		{"_mid", []string{"_main", "_caller_a"}, 1, 204, 724013},
		{"_mid", []string{"_main", "_long_work"}, 1, 204, 697942},
		{"_short_work", []string{"", "_main"}, 3, 822, 719014},
		{"_long_work", []string{"", "_main"}, 1, 68, 3082112},
		{"_caller_a", []string{"", "_main"}, 1, 77, 1200150},
		{"_caller_b", []string{"", "_main"}, 2, 482, 957663},
		{"_main", []string{""}, 1, 6575, 5965656},
	},
}

// ftimeAT10 is ftime prepared with /AT /STACK 10 (ftime/ft-at10).
var ftimeAT10 = timedProgram{
	program: program{
		modules: []string{"ftime.exe"},
		funcs: []fn{
			{0, "_spin", "ftime.obj", 11, 5928250, 5928213},
			{0, "_leaf", "ftime.obj", 5, 264, 2387103},
			{0, "_mid", "ftime.obj", 2, 208, 1384600},
			{0, "_short_work", "ftime.obj", 3, 1225, 707009},
			{0, "_long_work", "ftime.obj", 1, 117, 3067690},
			{0, "_caller_a", "ftime.obj", 1, 207, 1167051},
			{0, "_caller_b", "ftime.obj", 2, 356, 988637},
			{0, "_main", "ftime.obj", 1, 24025, 5954743},
		},
		depth: 5,
		total: 6281000,
		out:   326000,
	},
	stacks: []tst{
		{"_spin", []string{"_main", "_long_work"}, 1, 2374907, 2374968},
		{"_spin", []string{"_caller_b", "_leaf"}, 2, 989166, 988657},
		{"_spin", []string{"_main", "_short_work"}, 3, 705653, 705747},
		{"_spin", []string{"_caller_a", "_leaf"}, 1, 473599, 474130},
		{"_spin", []string{"_mid", "_leaf"}, 1, 462587, 462892},
		{"_spin", []string{"_mid", "_leaf"}, 1, 461906, 461523},
		{"_spin", []string{"_long_work", "_mid"}, 1, 230407, 230249},
		{"_spin", []string{"_caller_a", "_mid"}, 1, 230025, 230047},
		{"_leaf", []string{"_main", "_caller_b"}, 2, 132, 988693},
		{"_leaf", []string{"_main", "_caller_a"}, 1, 66, 473925},
		{"_leaf", []string{"_long_work", "_mid"}, 1, 66, 461739},
		{"_leaf", []string{"_caller_a", "_mid"}, 1, 0, 462746},
		{"_mid", []string{"_main", "_caller_a"}, 1, 156, 692680},
		{"_mid", []string{"_main", "_long_work"}, 1, 52, 691920},
		{"_short_work", []string{"", "_main"}, 3, 1225, 707009},
		{"_long_work", []string{"", "_main"}, 1, 117, 3067690},
		{"_caller_a", []string{"", "_main"}, 1, 207, 1167051},
		{"_caller_b", []string{"", "_main"}, 2, 356, 988637},
		{"_main", []string{""}, 1, 24025, 5954743},
	},
}

// ftimeFCStacks are the stacks of ftime prepared with /FC /AT (and /STACK
// 3, which gives the same: ../golden/ftime/fc-atdefault, fc-at3), in the
// order of their tab outputs.
var ftimeFCStacks = []st{
	{"_spin", []string{"_main", "_short_work"}, 3},
	{"_spin", []string{"_caller_b", "_leaf"}, 2},
	{"_spin", []string{"_mid", "_leaf"}, 1},
	{"_spin", []string{"_caller_a", "_leaf"}, 1},
	{"_spin", []string{"_caller_a", "_mid"}, 1},
	{"_spin", []string{"_mid", "_leaf"}, 1},
	{"_spin", []string{"_long_work", "_mid"}, 1},
	{"_spin", []string{"_main", "_long_work"}, 1},
	{"_leaf", []string{"_main", "_caller_b"}, 2},
	{"_leaf", []string{"_caller_a", "_mid"}, 1},
	{"_leaf", []string{"_main", "_caller_a"}, 1},
	{"_leaf", []string{"_long_work", "_mid"}, 1},
	{"_mid", []string{"_main", "_caller_a"}, 1},
	{"_mid", []string{"_main", "_long_work"}, 1},
	{"_short_work", []string{"", "_main"}, 3},
	{"_long_work", []string{"", "_main"}, 1},
	{"_caller_a", []string{"", "_main"}, 1},
	{"_caller_b", []string{"", "_main"}, 2},
	{"_main", []string{""}, 1},
}
