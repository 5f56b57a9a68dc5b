fn main() -> std::process::ExitCode {
    switchyard::cli::main()
}
