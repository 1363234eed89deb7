//! The privatedns controller: see the crate documentation of `capz_privatedns`.

use capz_kit::identity::IdentitySettings;

fn main() -> std::process::ExitCode {
    capz_kit::runner::main(capz_privatedns::ID, env!("CARGO_PKG_VERSION"), |ctx| async move {
        capz_privatedns::run(ctx, IdentitySettings::from_env()?).await
    })
}
