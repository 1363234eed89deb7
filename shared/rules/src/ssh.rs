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

/// Checks `type base64-blob [comment]`: a known type whose blob is a whole key of that type, as
/// OpenSSH encodes it (RFC 4253 section 6.6, RFC 5656 section 3.1, RFC 8709 section 4).
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
    check_blob(kind, &blob)
        .map_err(|why| format!("holds a {kind} key that {why}; copy the whole line of the .pub file"))
}

/// Why `blob` is not a public key of type `kind`; the text completes "a key that ...".
fn check_blob(kind: &str, blob: &[u8]) -> Result<(), String> {
    let mut fields = Fields(blob);
    if fields.next()? != kind.as_bytes() {
        return Err("is encoded as another type".to_owned());
    }
    match kind {
        "ssh-ed25519" => {
            let key = fields.next()?;
            if key.len() != 32 {
                return Err(format!("has {} bytes where Ed25519 keys have 32", key.len()));
            }
        }
        "ssh-rsa" => {
            let exponent = fields.next()?;
            let modulus = fields.next()?;
            // A positive exponent of at most 24 bits, odd and at least 3: what OpenSSH and
            // Go's x/crypto/ssh accept.
            // mpints are two's complement: a leading bit set is a negative number.
            let positive = |mpint: &[u8]| mpint.first().is_some_and(|byte| byte & 0x80 == 0);
            let value = exponent.iter().try_fold(0_u32, |value, byte| {
                (value < 1 << 16).then(|| value << 8 | u32::from(*byte))
            });
            if !positive(exponent) || !value.is_some_and(|e| e >= 3 && e % 2 == 1) {
                return Err("has an unusable public exponent".to_owned());
            }
            if modulus.len() < 2 || !positive(modulus) {
                return Err("has no positive modulus".to_owned());
            }
        }
        _ => {
            // ecdsa-sha2-<curve>: the curve again, then an uncompressed point of its size.
            let curve = kind.trim_start_matches("ecdsa-sha2-");
            if fields.next()? != curve.as_bytes() {
                return Err("names another curve".to_owned());
            }
            let coordinate = match curve {
                "nistp256" => 32,
                "nistp384" => 48,
                _ => 66,
            };
            let point = fields.next()?;
            if point.len() != 1 + 2 * coordinate || point[0] != 4 {
                return Err(format!("has no uncompressed {curve} point"));
            }
        }
    }
    if fields.0.is_empty() {
        Ok(())
    } else {
        Err("has bytes after the key".to_owned())
    }
}

/// The length-prefixed strings of an SSH key blob.
struct Fields<'a>(&'a [u8]);

impl<'a> Fields<'a> {
    fn next(&mut self) -> Result<&'a [u8], String> {
        let truncated = || "is truncated".to_owned();
        let (length, rest) = self.0.split_first_chunk::<4>().ok_or_else(truncated)?;
        let length = usize::try_from(u32::from_be_bytes(*length)).map_err(|_| truncated())?;
        let (field, rest) = rest.split_at_checked(length).ok_or_else(truncated)?;
        self.0 = rest;
        Ok(field)
    }
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

    /// Public key lines as ssh-keygen writes them.
    const RSA: &str = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQC7FfdqCZPcahfn1X5iRCyuM/wcESeMYHUMHPKrgrLtEzfYsn2P/MD5XSjG60pi+9LxxGh9LIKYdSYxs5EC96V9dkDNgBKbUbha4shihYrj49iLO1zIQmEgJ5Vyl/n8xn0qiGTynsns/DXp3BhjxYYkv2GKBTLB+RxXSwBHeXVQzw== user@host";
    const ECDSA_P256: &str = "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBB+IWUbmKzPNgIev/56hK73NA/5cCdVGVri8YejXLVgcBXnd1sXwebx715qfwALR7VI/0TlL2zp3/sKBK+MNFkU=";
    const ECDSA_P384: &str = "ecdsa-sha2-nistp384 AAAAE2VjZHNhLXNoYTItbmlzdHAzODQAAAAIbmlzdHAzODQAAABhBHBxGTwVPYp1MRCbjcU1mYzaci3n0/TytuRi2KHbJ7iJkH2fu1el57GGvpg7pHFZKiUx6GHjAy1OeBuLYhXWwfj/dywffKpsypJQClr5NhyhPehrI6nfKNplmt16B57EzA== test";
    const ECDSA_P521: &str = "ecdsa-sha2-nistp521 AAAAE2VjZHNhLXNoYTItbmlzdHA1MjEAAAAIbmlzdHA1MjEAAACFBAG2G82Kp/h6qpI2hVkUHvUJmgcK8vmKC+QkVwt9knchbTEPsU55TZtheEb1+LsGpx0EvgamKZ9QDHEZfz40HFp3RwAmPykFVUIwgj91oJ36r8ZmwFm7MPVKqRrb1a9Ugkt0F13Gj8/9GwE05fQ3vVSY0Bw8ZBcELLA2wTMk1Y0bZ4kTzw==";
    const ED25519: &str =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKTWQcnVKOdemX80qPhuyr5rSQpyZsaoicTZvO9YqZ5v test";

    fn check_line_of(kind: &str, blob: &[u8]) -> Result<(), String> {
        check_encoded(&STANDARD.encode(format!("{kind} {}", STANDARD.encode(blob))))
    }

    fn field(bytes: &[u8]) -> Vec<u8> {
        let mut field = u32::try_from(bytes.len()).unwrap().to_be_bytes().to_vec();
        field.extend_from_slice(bytes);
        field
    }

    #[test]
    fn keys_from_files_pass() {
        for line in [RSA, ECDSA_P256, ECDSA_P384, ECDSA_P521, ED25519] {
            check_encoded(&STANDARD.encode(line)).unwrap_or_else(|why| panic!("{line}: {why}"));
        }
    }

    #[test]
    fn junk_and_other_types_do_not() {
        assert!(check_encoded("not base64!").unwrap_err().contains("base64"));
        assert!(
            check_encoded(&STANDARD.encode("ssh-dss AAAA"))
                .unwrap_err()
                .contains("ssh-dss")
        );
        assert!(check_encoded(&STANDARD.encode("ssh-rsa")).is_err());
        let mismatched = check_line_of("ssh-ed25519", &field(b"ssh-rsa")).unwrap_err();
        assert!(mismatched.contains("another type"), "{mismatched}");
    }

    #[test]
    fn keys_with_the_wrong_material_do_not() {
        // What CAPZ's webhook refused: an Ed25519 key of 12 bytes.
        let short =
            check_encoded(&STANDARD.encode("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDdvbmx5IGEgdGVzdA=="))
                .unwrap_err();
        assert!(short.contains("truncated"), "{short}");
        let ed25519 = [field(b"ssh-ed25519"), field(&[7; 31])].concat();
        assert!(
            check_line_of("ssh-ed25519", &ed25519)
                .unwrap_err()
                .contains("31 bytes")
        );
        let trailing = [field(b"ssh-ed25519"), field(&[7; 32]), vec![0]].concat();
        assert!(
            check_line_of("ssh-ed25519", &trailing)
                .unwrap_err()
                .contains("after the key")
        );

        let rsa =
            |exponent: &[u8], modulus: &[u8]| [field(b"ssh-rsa"), field(exponent), field(modulus)].concat();
        let modulus = [&[0_u8][..], &[0xc5; 128]].concat();
        check_line_of("ssh-rsa", &rsa(&[1, 0, 1], &modulus)).unwrap();
        check_line_of("ssh-rsa", &rsa(&[0, 0x81], &modulus)).unwrap();
        for exponent in [&[2_u8][..], &[1], &[0x81], &[1, 0, 0, 1], &[]] {
            assert!(
                check_line_of("ssh-rsa", &rsa(exponent, &modulus))
                    .unwrap_err()
                    .contains("exponent"),
                "{exponent:?}"
            );
        }
        assert!(
            check_line_of("ssh-rsa", &rsa(&[3], &[0xc5; 128]))
                .unwrap_err()
                .contains("modulus")
        );

        let ecdsa =
            |curve: &[u8], point: &[u8]| [field(b"ecdsa-sha2-nistp256"), field(curve), field(point)].concat();
        let point = [&[4_u8][..], &[9; 64]].concat();
        check_line_of("ecdsa-sha2-nistp256", &ecdsa(b"nistp256", &point)).unwrap();
        assert!(
            check_line_of("ecdsa-sha2-nistp256", &ecdsa(b"nistp384", &point))
                .unwrap_err()
                .contains("curve")
        );
        assert!(
            check_line_of("ecdsa-sha2-nistp256", &ecdsa(b"nistp256", &point[..33]))
                .unwrap_err()
                .contains("point")
        );
    }
}
