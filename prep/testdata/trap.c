/* Functions whose entry cannot take a breakpoint: one starts with a trap
   (int3), one with a byte that is no instruction in 64-bit mode. */
__attribute__((naked)) void trapper(void) { __asm__("int3\n\tret"); }

__attribute__((naked)) void undecodable(void) { __asm__(".byte 0x06\n\tret"); }

int main(void) { return 0; }
