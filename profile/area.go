package profile

// codeArea is the memory PROFILE maps next to a module for the code it
// writes there: trampolines, return sites and the out-of-line slots of
// breakpoints, of every mechanism that plants in the module. It is filled
// from its start, each piece 16-byte aligned, so that the program's pages
// hold no more than they use, and built in image, the area's bytes so far,
// to be written into the program in one write (planting.write). The image
// grows as the area is used: an area is sized for the worst case of every
// site (1,100,000 lines: 277 MB), and its pieces are mostly smaller.
type codeArea struct {
	base  uint64 // 0: no area was mapped
	next  uint64 // where the next piece goes
	size  uint64 // the area's room
	image []byte
}

// newCodeArea returns the area mapped at base (0: none), of room for
// cells bytes.
func newCodeArea(base, cells uint64) *codeArea {
	return &codeArea{base: base, next: base, size: cells}
}

// mapped reports whether there is an area.
func (a *codeArea) mapped() bool { return a.base != 0 }

// alloc takes room for n bytes and returns its address, which code
// position-dependent was built for when it was built at a.next.
func (a *codeArea) alloc(n int) uint64 {
	at := a.next
	a.next += (uint64(n) + 15) &^ 15
	return at
}

// slot is alloc for a breakpoint's slot: 0 where the area has no room
// left, and the slot goes without (its instruction emulated, or the site
// refused), never past the area's end.
func (a *codeArea) slot(n int) uint64 {
	if !a.mapped() || a.next+(uint64(n)+15)&^15 > a.base+a.size {
		return 0
	}
	return a.alloc(n)
}

// put copies code into the image at at, an address alloc returned.
func (a *codeArea) put(at uint64, code []byte) {
	a.grow(at - a.base + uint64(len(code)))
	copy(a.image[at-a.base:], code)
}

// grow makes the image n bytes long at least.
func (a *codeArea) grow(n uint64) {
	if n > uint64(len(a.image)) {
		a.image = append(a.image, make([]byte, n-uint64(len(a.image)))...)
	}
}

// used returns the bytes of the area taken so far.
func (a *codeArea) used() []byte {
	if !a.mapped() {
		return nil
	}
	a.grow(a.next - a.base)
	return a.image[:a.next-a.base]
}
