// The Rust fixture of the dwarf tests, built as crate "demo".
#[inline(never)]
fn helper(x: u64) -> u64 {
    x * 3 + 1
}

fn main() {
    let n = std::env::args().count() as u64;
    println!("{}", helper(n));
}
