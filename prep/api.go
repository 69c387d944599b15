// Package prep is phase I and phase II of the profiler. Phase I turns ELF
// files (read with package dwarf) into a [datafile.Plan]: which functions or
// lines to profile, after the default selections of profiler.ini and
// tools.ini and the /INC, /EXC and /EXCALL specifications, with every site
// checked to lie on an instruction boundary (package instr). Phase II adds
// the runs of .pbo files into a .pbt.
package prep
