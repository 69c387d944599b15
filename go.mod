module github.com/sourceprofiler/sprof

go 1.26.8

require (
	github.com/go-delve/delve v1.27.2
	github.com/google/go-cmp v0.7.0
	github.com/google/pprof v0.0.0-20261105003125-4bf881d7fb0b
	github.com/ianlancetaylor/demangle v0.0.0-20260724033716-83e58baca724
	golang.org/x/arch v0.32.0
	golang.org/x/sys v0.49.0
)
