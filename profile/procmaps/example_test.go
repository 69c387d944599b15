package procmaps_test

import (
	"fmt"

	"github.com/sourceprofiler/sprof/profile/procmaps"
)

// A PIE program's mappings as the kernel lists them: the program is found
// by its inode and name, and its first mapping gives where it is loaded;
// its segments make one instance.
func Example() {
	maps, err := procmaps.Parse([]byte(`55d0c7a00000-55d0c7a01000 r--p 00000000 08:01 1234   /usr/bin/prog
55d0c7a01000-55d0c7a02000 r-xp 00001000 08:01 1234   /usr/bin/prog
55d0c7a02000-55d0c7a03000 rw-p 00002000 08:01 1234   /usr/bin/prog
7ffd1c5e0000-7ffd1c601000 rw-p 00000000 00:00 0      [stack]
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	first, ok := procmaps.ModuleMapping(maps, []string{"prog"}, 1234)
	fmt.Printf("%v: %s at %#x, offset %#x\n", ok, first.Path, first.Start, first.Offset)
	for _, in := range procmaps.Instances(maps, first, 0x3000) {
		fmt.Printf("instance %#x-%#x\n", in.Lo, in.Hi)
	}
	// Output:
	// true: /usr/bin/prog at 0x55d0c7a00000, offset 0x0
	// instance 0x55d0c7a00000-0x55d0c7a03000
}
