// mimalloc: glibc's malloc cost about a seventh of the gateway's CPU per tools/call (see the
// workspace's Cargo.toml).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    switchyard::cli::main()
}
