// rcounts.rs - a Rust fixture with counts known by construction:
//   rcounts::work          1000
//   rcounts::Acc::add       300 (a method)
//   rcounts::fib            177 (fib(10))
//   rcounts::main             1
struct Acc {
    total: u64,
}

impl Acc {
    #[inline(never)]
    fn add(&mut self, x: u64) {
        self.total = self.total.wrapping_add(x);
    }
}

#[inline(never)]
fn work(x: u64) -> u64 {
    x * 3 + 1
}

#[inline(never)]
fn fib(n: u64) -> u64 {
    if n < 2 {
        n
    } else {
        fib(n - 1) + fib(n - 2)
    }
}

fn main() {
    let mut acc = Acc { total: 0 };
    let mut s = 0u64;
    for i in 0..1000 {
        s = s.wrapping_add(work(std::hint::black_box(i)));
    }
    for i in 0..300 {
        acc.add(std::hint::black_box(i));
    }
    println!("rcounts {} {} {}", s, acc.total, fib(std::hint::black_box(10)));
}
