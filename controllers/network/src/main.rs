//! The network controller's binary.

use capz_kit::identity::IdentitySettings;

fn main() -> std::process::ExitCode {
    capz_kit::runner::main(capz_network::ID, env!("CARGO_PKG_VERSION"), |ctx| async move {
        capz_network::run(ctx, IdentitySettings::from_env()?).await
    })
}
