//! The bastion controller: see the crate documentation of `capz_bastion`.

use capz_kit::identity::IdentitySettings;

fn main() -> std::process::ExitCode {
    capz_kit::runner::main(capz_bastion::ID, env!("CARGO_PKG_VERSION"), |ctx| async move {
        capz_bastion::run(ctx, IdentitySettings::from_env()?).await
    })
}
