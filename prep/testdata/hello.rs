// The Rust fixture of the plan tests: the default selections leave the
// crate's own functions.
struct Counter {
    n: u64,
}

impl Counter {
    fn bump(&mut self, k: u64) {
        self.n += k;
    }
}

fn fib(n: u64) -> u64 {
    if n < 2 {
        n
    } else {
        fib(n - 1) + fib(n - 2)
    }
}

fn main() {
    let mut c = Counter { n: 0 };
    c.bump(fib(10));
    println!("{}", c.n);
}
