package datafile

import (
	"crypto/sha256"
	"encoding/binary"
	"hash"
)

// PlanID returns the ID of p's content: the first 16 bytes of a SHA-256 of
// the identity of every module (Name, Arch, BuildID, Size, ModTime, PIE,
// LinkBase), every function's Module, Name and Entry, every line's Module,
// file name, Line and Addrs, and one bit of the method: with times (timing,
// sampling) or not; and, where set, Uncounted (a run that counted no
// call fits no database of one that did).
//
// Two plans with equal IDs count the same sites of the same files, so the
// counts of one can be added to a database of the other; of the method only
// whether it has times matters (timing and sampling), as data with and
// without times cannot mix. Counts of a
// function counting run thus fit a database re-prepared for function
// coverage of the same program, where [Merged.Add] refuses them for their
// method (PRF1304), and do not fit one re-prepared for function timing
// (PRF1306), as original.md §10 observes. Paths, sources, declaration
// lines, /SF, /AT, /STACK and /CB are not part of the ID.
func PlanID(p *Plan) ID {
	h := idHash{h: sha256.New()}
	h.str("sprof plan id 1")
	h.bool(p.Method.HasTimes())
	h.uint(uint64(len(p.Modules)))
	for i := range p.Modules {
		m := &p.Modules[i]
		h.str(m.Name)
		h.str(m.Arch)
		h.str(string(m.BuildID))
		h.uint(uint64(m.Size))
		h.uint(uint64(m.ModTime))
		h.bool(m.PIE)
		h.uint(m.LinkBase)
	}
	h.uint(uint64(len(p.Funcs)))
	for i := range p.Funcs {
		f := &p.Funcs[i]
		h.uint(uint64(f.Module))
		h.str(f.Name)
		h.uint(f.Entry)
	}
	h.uint(uint64(len(p.Lines)))
	for i := range p.Lines {
		l := &p.Lines[i]
		h.uint(uint64(l.Module))
		h.str(lineFile(p, l))
		h.uint(uint64(l.Line))
		h.uint(uint64(len(l.Addrs)))
		for _, a := range l.Addrs {
			h.uint(a)
		}
	}
	if len(p.Branches) > 0 {
		// (Only where there are: the IDs of the plans before them stay.)
		h.str("branches")
		h.uint(uint64(len(p.Branches)))
		for _, b := range p.Branches {
			h.uint(uint64(b.Line))
			h.uint(b.Addr)
			h.uint(b.Target)
		}
	}
	if p.Uncounted {
		// (Only where set: the IDs of the plans before it stay.)
		h.str("uncounted")
	}
	return h.sum()
}

// lineFile returns the name of l's file, or "" when its indexes are out of
// range (an invalid plan, which Validate refuses anyway).
func lineFile(p *Plan, l *Line) string {
	if l.Module < 0 || l.Module >= len(p.Modules) {
		return ""
	}
	files := p.Modules[l.Module].Files
	if l.File < 0 || l.File >= len(files) {
		return ""
	}
	return files[l.File]
}

// idHash feeds an unambiguous encoding to a hash: fixed-size integers and
// length-prefixed strings, gathered in a buffer to spare the hash many
// small writes.
type idHash struct {
	h   hash.Hash
	buf []byte
}

func (h *idHash) uint(v uint64) {
	h.buf = binary.LittleEndian.AppendUint64(h.buf, v)
	h.flush(32 << 10)
}

func (h *idHash) str(s string) {
	h.uint(uint64(len(s)))
	h.buf = append(h.buf, s...)
	h.flush(32 << 10)
}

func (h *idHash) bool(b bool) {
	if b {
		h.uint(1)
	} else {
		h.uint(0)
	}
}

// flush hashes the buffer once it holds more than limit bytes.
func (h *idHash) flush(limit int) {
	if len(h.buf) > limit {
		h.h.Write(h.buf)
		h.buf = h.buf[:0]
	}
}

// sum returns the ID: the first bytes of the hash of everything written.
func (h *idHash) sum() ID {
	h.flush(0)
	var id ID
	copy(id[:], h.h.Sum(nil))
	return id
}
