// Package procmaps reads a process's memory map, /proc/PID/maps (proc(5)),
// and finds in it where a file is mapped: the mapping of its first
// segment, by inode and name, and each instance of it (a program, or one
// load of a library, which may be loaded twice at once).
package procmaps

import (
	"bufio"
	"bytes"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Mapping is one line of /proc/pid/maps.
type Mapping struct {
	Start, End uint64
	Perms      string
	Offset     uint64
	Dev        string // "major:minor" in hexadecimal, as the kernel prints it
	Inode      uint64
	Path       string
}

// Parse parses the content of /proc/pid/maps (proc(5)). Malformed lines
// are an error: the file comes from the kernel, so one means a bug here.
func Parse(data []byte) ([]Mapping, error) {
	var maps []Mapping
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" {
			continue
		}
		m, err := ParseLine(line)
		if err != nil {
			return nil, fmt.Errorf("maps line %d: %w", n, err)
		}
		maps = append(maps, m)
	}
	return maps, sc.Err()
}

// ParseLine parses one line of /proc/PID/maps.
func ParseLine(line string) (Mapping, error) {
	// 55d0c7a00000-55d0c7a02000 r--p 00000000 08:01 1234   /usr/bin/prog
	f := strings.Fields(line)
	if len(f) < 5 {
		return Mapping{}, fmt.Errorf("%q: too few fields", line)
	}
	lo, hi, ok := strings.Cut(f[0], "-")
	if !ok {
		return Mapping{}, fmt.Errorf("%q: bad address range", line)
	}
	var m Mapping
	var err error
	if m.Start, err = strconv.ParseUint(lo, 16, 64); err != nil {
		return Mapping{}, fmt.Errorf("%q: %w", line, err)
	}
	if m.End, err = strconv.ParseUint(hi, 16, 64); err != nil {
		return Mapping{}, fmt.Errorf("%q: %w", line, err)
	}
	m.Perms = f[1]
	if m.Offset, err = strconv.ParseUint(f[2], 16, 64); err != nil {
		return Mapping{}, fmt.Errorf("%q: %w", line, err)
	}
	m.Dev = f[3]
	if m.Inode, err = strconv.ParseUint(f[4], 10, 64); err != nil {
		return Mapping{}, fmt.Errorf("%q: %w", line, err)
	}
	if len(f) > 5 {
		// The path is the rest of the line after the fifth field (it may
		// contain spaces; the kernel pads the inode with spaces).
		rest := line
		for range 5 {
			rest = strings.TrimLeft(rest, " \t")
			rest = rest[strings.IndexAny(rest+" ", " \t"):]
		}
		m.Path = strings.TrimLeft(rest, " \t")
	}
	return m, nil
}

// ModuleMapping returns the mapping of the lowest file offset of the file
// with the given inode mapped under one of names (base names, the first
// found wins: see FileNames), the mapping of its first segment, or false
// when it is not mapped. The device is not compared: on overlay file
// systems stat(2) and the maps file disagree about it. (Of several
// instances of the file, see Instances.)
func ModuleMapping(maps []Mapping, names []string, inode uint64) (Mapping, bool) {
	for _, name := range names {
		var first Mapping
		found := false
		for _, m := range maps {
			if m.Inode == inode && (!found || m.Offset < first.Offset) && filepath.Base(m.Path) == name {
				first, found = m, true
			}
		}
		if found {
			return first, true
		}
	}
	return Mapping{}, false
}

// FileNames returns the base names under which the file at path may be
// mapped, the likeliest first: the kernel names a mapping after the file
// it opened, at the end of the chain of symbolic links path may be (a
// link in the same directory, in another, a chain of links: "python3"
// runs "python3.11"); then path's own.
func FileNames(path string) []string {
	names := []string{filepath.Base(path)}
	if real, err := filepath.EvalSymlinks(path); err == nil && filepath.Base(real) != names[0] {
		names = []string{filepath.Base(real), names[0]}
	}
	return names
}

// FileMapping returns the first mapping of the file at path, identified
// by its inode (symbolic links followed) and mapped under one of its
// names (FileNames).
func FileMapping(maps []Mapping, path string) (Mapping, bool) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return Mapping{}, false
	}
	return ModuleMapping(maps, FileNames(path), st.Ino)
}

// Instance is one mapping of a module's file in the process: the
// program, or one load of a library (a library may be loaded twice at
// once: dlmopen of a library already loaded, or a copy of it at another
// path). First is its mapping of the lowest address, which gives its
// load bias, and [Lo, Hi) the span its segments take.
type Instance struct {
	First  Mapping
	Lo, Hi uint64
}

// Instances groups the mappings of the file with first's inode and path
// into instances, in address order. The dynamic linker (and the kernel,
// for the program) reserves the whole span of an instance's segments
// at once, span bytes from its first mapping, and maps its segments
// inside: instances do not interleave, and each begins at its first
// segment's mapping. (File offsets do not tell: the RELRO part of a
// segment is a mapping of its own, and on arm64, whose segments are
// aligned to 64 KiB, a later segment may map the file from offset 0
// again; but an instance begins at a mapping of the file's lowest
// offset.) With span 0 (the file's segments unknown) the file's mappings
// are one instance. An instance must have an executable mapping: the
// program may map the file as data too.
func Instances(maps []Mapping, first Mapping, span uint64) []Instance {
	var file []Mapping
	for _, m := range maps {
		if m.Inode == first.Inode && m.Path == first.Path {
			file = append(file, m)
		}
	}
	lowest := ^uint64(0)
	for _, m := range file {
		lowest = min(lowest, m.Offset)
	}
	var out []Instance
	for i := 0; i < len(file); {
		in := Instance{First: file[i], Lo: file[i].Start, Hi: file[i].End}
		exec := false
		j := i
		// (A mapping of a later offset begins no instance, whatever
		// span says.)
		for ; j < len(file) && (j == i || span == 0 || file[j].Start < in.Lo+span || file[j].Offset != lowest); j++ {
			in.Hi = max(in.Hi, file[j].End)
			exec = exec || strings.Contains(file[j].Perms, "x")
		}
		if span != 0 {
			in.Hi = max(in.Hi, in.Lo+span)
		}
		if exec {
			out = append(out, in)
		}
		i = j
	}
	return out
}
