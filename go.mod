module github.com/sourceprofiler/sprof

go 1.26.8

require (
	github.com/alecthomas/kong v1.17.0 // indirect
	github.com/chzyer/readline v1.5.1 // indirect
	github.com/go-delve/delve v1.27.2 // indirect
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/google/pprof v0.0.0-20260906184651-6331bc6350fe // indirect
	github.com/ianlancetaylor/demangle v0.0.0-20260724033716-83e58baca724 // indirect
	github.com/rogpeppe/go-internal v1.16.0 // indirect
	golang.org/x/arch v0.32.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
