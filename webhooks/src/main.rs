//! `capz-webhooks`: the admission webhook server of capz-rs. See the crate documentation.

fn main() -> std::process::ExitCode {
    capz_webhooks::cli::main()
}
