# Source Profiler for Linux: prep, profile, plist.
#
#   make demo    build the tools and an example, profile it, print the report
#   make test    everything CI runs (unit, end-to-end, race, vet, lint, format,
#                and the end-to-end suites on arm64), after installing the
#                Debian packages it needs (make deps)
#   make deps    install the Debian packages the tests need (as root)
#   make install the tools, the wrappers, profiler.ini, profile.mk, the
#                man pages and the documentation (README.md, docs/) under
#                $(PREFIX) (default /usr/local), staged under $(DESTDIR)
#                when set; make uninstall removes them

GO        ?= go
BIN       := bin
TOOLS     := prep profile plist
WRAPPERS  := fcount fcover ftime lcount lcover
PREFIX    ?= /usr/local
DESTDIR   ?=
bindir    := $(DESTDIR)$(PREFIX)/bin
datadir   := $(DESTDIR)$(PREFIX)/share/sprof
mandir    := $(DESTDIR)$(PREFIX)/share/man/man1
docdir    := $(DESTDIR)$(PREFIX)/share/doc/sprof
STATICCHECK_VERSION := v0.8.2
export CGO_ENABLED := 0

.PHONY: all build install uninstall test unit race vet cross lint fmt fmt-check tidy-check fuzz golden check clean demo bench deps arm64 arm64-all arm64-bti arm64-16k

all: build

build:
	@mkdir -p $(BIN)
	$(GO) build -trimpath -o $(BIN)/ ./cmd/...
	cp prep/profiler.ini $(BIN)/profiler.ini
	cp $(addprefix scripts/,$(WRAPPERS)) $(BIN)/
	cp scripts/profile.mk $(BIN)/profile.mk

# install puts everything where a Linux user looks for it: PREP reads
# profiler.ini from ../share/sprof beside itself, and a Makefile includes
# $(PREFIX)/share/sprof/profile.mk with one line. The man pages are made
# from the tools' own help (--man; the wrappers' --help).
install: build
	install -d $(bindir) $(datadir) $(mandir) $(docdir)
	install -m 755 $(addprefix $(BIN)/,$(TOOLS) $(WRAPPERS)) $(bindir)/
	install -m 644 prep/profiler.ini scripts/profile.mk $(datadir)/
	for t in $(TOOLS); do $(BIN)/$$t --man >$(mandir)/$$t.1; done
	for w in $(WRAPPERS); do scripts/man-from-help $(BIN)/$$w >$(mandir)/$$w.1; done
	install -m 644 LICENSE README.md $(docdir)/
	@# docs/ whole (the course, the design, the images), where the
	@# README's links lead; a file an earlier version installed goes.
	rm -rf $(docdir)/docs
	cp -R docs $(docdir)/
	chmod -R u=rwX,go=rX $(docdir)/docs

uninstall:
	rm -f $(addprefix $(bindir)/,$(TOOLS) $(WRAPPERS))
	rm -f $(datadir)/profiler.ini $(datadir)/profile.mk $(docdir)/LICENSE $(docdir)/README.md
	rm -rf $(docdir)/docs
	rm -f $(addprefix $(mandir)/,$(addsuffix .1,$(TOOLS) $(WRAPPERS)))
	-rmdir $(datadir) $(docdir) 2>/dev/null

# make test is what CI runs: first make deps, which installs the Debian
# packages the tests need when they are missing, as root (otherwise it
# stops here, before any test, with the command to run); then the whole
# check on this machine, then the end-to-end suites on a real arm64 kernel
# in a VM, three times: plain, on a kernel with 16K pages (the two from one
# build), and with pointer authentication and branch protection.
test: deps
	@$(MAKE) --no-print-directory check arm64-all

arm64-all:
	./scripts/arm64-test --all

# The end-to-end suites on arm64, in qemu-system-aarch64 (scripts/arm64-test,
# which boots scripts/arm64-vm). The first run downloads Debian's kernels
# and busybox into ~/.cache/arm64-vm.
arm64:
	./scripts/arm64-test

arm64-bti:
	./scripts/arm64-test --bti

arm64-16k:
	./scripts/arm64-test --pages16k

# unit runs every test. None needs a quiet machine: the timing tests take
# their truth from the run they check (docs/testing.md); how close the
# times come to known work on a machine running nothing else is measured
# by make bench (docs/performance.md, "Timing accuracy"). e2e's tests
# build the tools with go build, which go test's cache does not see: a
# result it kept would stand for tools since changed, so they always run.
unit:
	$(GO) test $$($(GO) list ./... | grep -v '/e2e$$')
	$(GO) test -count=1 ./e2e

# race runs every package's tests under the race detector but e2e's:
# those run the tools as programs of their own, built without it, and
# only the harness would be checked, for a minute more.
race:
	CGO_ENABLED=1 $(GO) test -race $$($(GO) list ./... | grep -v '/e2e$$')

vet:
	$(GO) vet ./...

# cross vets the code for the platforms the tools do not run on, whose
# stubs (profile/ptrace/unsupported.go) must keep up with the real code:
# a Mac, and a Linux of another architecture.
cross:
	GOOS=darwin GOARCH=arm64 $(GO) vet ./...
	GOOS=linux GOARCH=riscv64 $(GO) vet ./...

lint:
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

fmt:
	gofmt -w .

fmt-check:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

tidy-check:
	$(GO) mod tidy -diff

# check is the tests of this machine only.
check: fmt-check vet cross tidy-check lint unit race

# deps installs, as root, the Debian packages the tests need on a fresh
# machine (scripts/install-deps lists them, with what needs each): C and
# C++ compilers, binutils, valgrind, make, groff, lcov, the arm64 cross
# compilers and glibc, qemu-system-arm, cpio and chromium-headless-shell.
# make test runs it first.
deps:
	@./scripts/install-deps

# fuzz runs every Fuzz target of every package for FUZZTIME each; a package
# whose tests do not build fails the target instead of being skipped.
FUZZTIME ?= 30s
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
	  list=$$($(GO) test -list '^Fuzz' $$pkg); \
	  for f in $$(echo "$$list" | grep '^Fuzz' || true); do \
	    echo "fuzz $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 5s $$pkg; \
	  done; done

# golden rewrites the golden files; review them with git diff. Only the
# packages whose tests compare golden files take the flag, the one -update
# of internal/golden: those calling golden.Check, or testutil.Golden and
# testutil.Update, which are its. Their golden tests have various names (TestRoundTrip,
# TestTextGolden, TestLinuxGoldens, TestReportGolden), so each runs whole.
GOLDEN_GREP := (testutil|golden|goldenfile)\.(Update|Golden|Check)\b
golden:
	@pkgs=$$(grep -rlE --include='*_test.go' --exclude-dir=testdata '$(GOLDEN_GREP)' . | xargs -r -n1 dirname | sort -u); \
	if [ -z "$$pkgs" ]; then echo "golden: no package defines -update" >&2; exit 1; fi; \
	echo $(GO) test $$pkgs -update; $(GO) test $$pkgs -update

demo: build
	@./scripts/demo

bench:
	@./bench/run

clean:
	rm -rf $(BIN) bench/out
	$(GO) clean -testcache
