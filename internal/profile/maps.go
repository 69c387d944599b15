package profile

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// mapping is one line of /proc/pid/maps.
type mapping struct {
	Start, End uint64
	Perms      string
	Offset     uint64
	Dev        string // "major:minor" in hexadecimal, as the kernel prints it
	Inode      uint64
	Path       string
}

// parseMaps parses the content of /proc/pid/maps (proc(5)). Malformed lines
// are an error: the file comes from the kernel, so one means a bug here.
func parseMaps(data []byte) ([]mapping, error) {
	var maps []mapping
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" {
			continue
		}
		m, err := parseMapsLine(line)
		if err != nil {
			return nil, fmt.Errorf("maps line %d: %w", n, err)
		}
		maps = append(maps, m)
	}
	return maps, sc.Err()
}

func parseMapsLine(line string) (mapping, error) {
	// 55d0c7a00000-55d0c7a02000 r--p 00000000 08:01 1234   /usr/bin/prog
	f := strings.Fields(line)
	if len(f) < 5 {
		return mapping{}, fmt.Errorf("%q: too few fields", line)
	}
	lo, hi, ok := strings.Cut(f[0], "-")
	if !ok {
		return mapping{}, fmt.Errorf("%q: bad address range", line)
	}
	var m mapping
	var err error
	if m.Start, err = strconv.ParseUint(lo, 16, 64); err != nil {
		return mapping{}, fmt.Errorf("%q: %w", line, err)
	}
	if m.End, err = strconv.ParseUint(hi, 16, 64); err != nil {
		return mapping{}, fmt.Errorf("%q: %w", line, err)
	}
	m.Perms = f[1]
	if m.Offset, err = strconv.ParseUint(f[2], 16, 64); err != nil {
		return mapping{}, fmt.Errorf("%q: %w", line, err)
	}
	m.Dev = f[3]
	if m.Inode, err = strconv.ParseUint(f[4], 10, 64); err != nil {
		return mapping{}, fmt.Errorf("%q: %w", line, err)
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

// moduleMapping returns the mapping of the lowest file offset of the file
// with the given base name and inode (the mapping of its first segment), or
// false when it is not mapped. The device is not compared: on overlay file
// systems stat(2) and the maps file disagree about it.
func moduleMapping(maps []mapping, name string, inode uint64) (mapping, bool) {
	var first mapping
	found := false
	for _, m := range maps {
		if m.Inode == inode && filepath.Base(m.Path) == name && (!found || m.Offset < first.Offset) {
			first, found = m, true
		}
	}
	return first, found
}

// tgidOf returns the process (thread group) of thread tid from
// /proc/tid/status, or tid itself when that cannot be read.
func tgidOf(tid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", tid))
	if err != nil {
		return tid
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "Tgid:"); ok {
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
				return n
			}
		}
	}
	return tid
}
