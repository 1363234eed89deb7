//! The loadbalancer controller: see the crate documentation of `capz_loadbalancer`.

use capz_kit::identity::IdentitySettings;

fn main() -> std::process::ExitCode {
    capz_kit::runner::main(
        capz_loadbalancer::ID,
        env!("CARGO_PKG_VERSION"),
        |ctx| async move { capz_loadbalancer::run(ctx, IdentitySettings::from_env()?).await },
    )
}
