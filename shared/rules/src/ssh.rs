//! SSH public keys as the machine specs carry them: base64 of an `authorized_keys` line.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

/// The key types Azure accepts for Linux machines.
const KEY_TYPES: &[&str] = &[
    "ssh-rsa",
    "ssh-ed25519",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
];

/// Why a spec's key is not usable; the text completes "sshPublicKey ...".
pub(crate) fn check_encoded(encoded: &str) -> Result<(), String> {
    let line = STANDARD.decode(encoded.trim()).map_err(|_| {
        "must be base64 of an OpenSSH public key line (base64 -w0 < id_ed25519.pub)".to_owned()
    })?;
    let line = String::from_utf8(line).map_err(|_| "must decode to an OpenSSH public key line".to_owned())?;
    check_line(line.trim())
}

/// Checks `type base64-blob [comment]`: a known type whose blob names the same type.
fn check_line(line: &str) -> Result<(), String> {
    let mut parts = line.split_whitespace();
    let (Some(kind), Some(blob)) = (parts.next(), parts.next()) else {
        return Err("must decode to \"<type> <key> [comment]\", as in an id_*.pub file".to_owned());
    };
    if !KEY_TYPES.contains(&kind) {
        return Err(format!(
            "has key type {kind:?}; Azure accepts {}",
            KEY_TYPES.join(", ")
        ));
    }
    let blob = STANDARD
        .decode(blob)
        .map_err(|_| "holds a key that is not valid base64".to_owned())?;
    let named = blob
        .get(..4)
        .and_then(|len| {
            let len = usize::try_from(u32::from_be_bytes(len.try_into().ok()?)).ok()?;
            blob.get(4..4 + len)
        })
        .ok_or_else(|| "holds a truncated key".to_owned())?;
    if named != kind.as_bytes() {
        return Err(format!(
            "holds a key whose encoding does not match its type {kind:?}"
        ));
    }
    Ok(())
}

/// A fresh Ed25519 public key, encoded as the spec stores it. The private half is discarded at
/// once: the field only has to hold a valid key, access goes through the user's own keys.
pub(crate) fn generate_encoded() -> Result<String, ring::error::Unspecified> {
    use ring::signature::KeyPair as _;
    let rng = ring::rand::SystemRandom::new();
    let pkcs8 = ring::signature::Ed25519KeyPair::generate_pkcs8(&rng)?;
    let pair =
        ring::signature::Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).map_err(|_| ring::error::Unspecified)?;
    let mut blob = Vec::with_capacity(51);
    for part in [b"ssh-ed25519".as_slice(), pair.public_key().as_ref()] {
        blob.extend_from_slice(
            &u32::try_from(part.len())
                .map_err(|_| ring::error::Unspecified)?
                .to_be_bytes(),
        );
        blob.extend_from_slice(part);
    }
    let line = format!("ssh-ed25519 {}", STANDARD.encode(blob));
    Ok(STANDARD.encode(line))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_key_passes_the_check() {
        let key = generate_encoded().unwrap();
        check_encoded(&key).unwrap();
        assert_ne!(key, generate_encoded().unwrap());
    }

    #[test]
    fn keys_from_files_pass_and_junk_does_not() {
        // An RSA key line as ssh-keygen writes it (shortened blob: the check reads the type only).
        let rsa = format!(
            "ssh-rsa {} user@host",
            STANDARD.encode(b"\0\0\0\x07ssh-rsa\0\0\0\x03\x01\0\x01")
        );
        check_encoded(&STANDARD.encode(&rsa)).unwrap();
        assert!(check_encoded("not base64!").unwrap_err().contains("base64"));
        assert!(
            check_encoded(&STANDARD.encode("ssh-dss AAAA"))
                .unwrap_err()
                .contains("ssh-dss")
        );
        let mismatched = format!("ssh-ed25519 {}", STANDARD.encode(b"\0\0\0\x07ssh-rsa"));
        assert!(
            check_encoded(&STANDARD.encode(mismatched))
                .unwrap_err()
                .contains("does not match")
        );
        assert!(check_encoded(&STANDARD.encode("ssh-rsa")).is_err());
    }
}
