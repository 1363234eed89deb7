//! The aks controller: see the crate documentation of `capz_aks`.

use capz_kit::identity::IdentitySettings;

fn main() -> std::process::ExitCode {
    capz_kit::runner::main(capz_aks::ID, env!("CARGO_PKG_VERSION"), |ctx| async move {
        capz_aks::run(ctx, IdentitySettings::from_env()?).await
    })
}
