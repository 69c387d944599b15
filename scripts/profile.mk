# profile.mk: profiling targets for your own (GNU) Makefile (Source Profiler for
# Linux). `make install` puts it in $(PREFIX)/share/sprof; `make build`
# copies it into bin/ beside prep, profile and plist.
#
# Set the variables, then include the fragment:
#
#   PROFILE_PROG = hello
#   PROFILE_ARGS = 1000
#   include /usr/local/share/sprof/profile.mk
#
# (installed by make install; in a build tree it is bin/profile.mk)
#
#   hello: hello.c
#   	$(CC) -g -O0 -o $@ hello.c
#
# and run `make fcount`: make builds hello, then counts its function calls.
#
# Targets:
#   fcount         function counting: prep /FC, profile, prep /M, then plist
#                  into $(PROFILE_NAME).fcount.txt
#   fcover         function coverage: the same with prep /FV, into
#                  $(PROFILE_NAME).fcover.txt
#   ftime, lcount, lcover
#                  function timing, line counting, line coverage: the
#                  same with prep /FT, /LC, /LV
#   profile-clean  removes the data files $(PROFILE_NAME).pbi .pbo .pbt (the
#                  reports stay)
# The program's exit status is a target's, after its report.
#
# Variables (set them before the include: the targets' prerequisites are
# read there):
#   PROFILE_PROG   the program: a path, or a name found in the current
#                  directory, else on PATH (required)
#   PROFILE_ARGS   the program's arguments
#   PROFILE_BIN    the directory holding prep, profile and plist; empty (the
#                  default) takes them from PATH
#   PREP_FLAGS     more options of the first prep (/EXC, /INC, ...)
#   PROFILE_FLAGS  more options of profile (/E file, ...; /X is given)
#   PLIST_FLAGS    more options of plist (/SN, /T, ...)
#   PROFILE_DEPS   what the targets need first; $(PROFILE_PROG) by
#                  default, so that make builds the program. Set it empty to
#                  profile a program make has no rule for (one on PATH).
#
# PROFILE_NAME is the program's base name: the tools write the data files
# (NAME.pbi, NAME.pbo, NAME.pbt) in the current directory, and so do these
# targets with the reports. The targets share the data files: do not run
# two in one parallel make.

PROFILE_PROG  ?=
PROFILE_ARGS  ?=
PROFILE_BIN   ?=
PREP_FLAGS    ?=
PROFILE_FLAGS ?=
PLIST_FLAGS   ?=
PROFILE_DEPS  ?= $(PROFILE_PROG)
PROFILE_NAME   = $(notdir $(PROFILE_PROG))

# Including the fragment must not change the Makefile's default goal.
profile_mk_goal := $(.DEFAULT_GOAL)

# profile_mk_tool is the command of a tool: from PROFILE_BIN, else PATH.
profile_mk_tool = $(if $(PROFILE_BIN),$(PROFILE_BIN)/$(1),$(1))

# profile_mk_need stops make when PROFILE_PROG is not set, before a recipe
# runs with empty names.
profile_mk_need = $(if $(PROFILE_PROG),,$(error profile.mk: set PROFILE_PROG to the program to profile))

# profile_mk_run is the four steps for the prep option $(1), writing the
# report $(PROFILE_NAME).$(2).txt, in one shell: a failing step of the
# profiler stops make; the program runs under profile /X, and its exit
# status is the target's, after the report is written (a failing test
# program still gets its report, and still fails the build). The report is
# written under a temporary name, so a failing plist leaves none.
define profile_mk_run
$(profile_mk_need)
$(call profile_mk_tool,prep) /nologo $(1) $(PREP_FLAGS) $(PROFILE_PROG)
status=0; \
$(call profile_mk_tool,profile) /nologo /X $(PROFILE_FLAGS) $(PROFILE_PROG) $(PROFILE_ARGS) || status=$$?; \
$(call profile_mk_tool,prep) /nologo /M $(PROFILE_NAME) || exit 1; \
$(call profile_mk_tool,plist) /nologo $(PLIST_FLAGS) $(PROFILE_NAME) >$(PROFILE_NAME).$(2).txt.tmp || { rm -f $(PROFILE_NAME).$(2).txt.tmp; exit 1; }; \
mv -f $(PROFILE_NAME).$(2).txt.tmp $(PROFILE_NAME).$(2).txt; \
exit $$status
endef

.PHONY: fcount fcover ftime lcount lcover profile-clean

fcount: $(PROFILE_DEPS)
	$(call profile_mk_run,/FC,fcount)

fcover: $(PROFILE_DEPS)
	$(call profile_mk_run,/FV,fcover)

ftime: $(PROFILE_DEPS)
	$(call profile_mk_run,/FT,ftime)

lcount: $(PROFILE_DEPS)
	$(call profile_mk_run,/LC,lcount)

lcover: $(PROFILE_DEPS)
	$(call profile_mk_run,/LV,lcover)

profile-clean:
	$(profile_mk_need)
	rm -f $(PROFILE_NAME).pbi $(PROFILE_NAME).pbo $(PROFILE_NAME).pbt

.DEFAULT_GOAL := $(profile_mk_goal)
