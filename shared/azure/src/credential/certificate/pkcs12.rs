//! A reader of PKCS#12 (PFX) archives (RFC 7292): the certificates and private keys inside, after
//! checking the archive's MAC with the password.
//!
//! It covers what tools write today: OpenSSL 3's defaults (PBES2 with PBKDF2-HMAC-SHA-256 and
//! AES-256-CBC, a SHA-256 MAC), `openssl pkcs12 -legacy` and older Windows exports (3DES for keys,
//! 40-bit RC2 for certificates, a SHA-1 MAC), and archives with nothing encrypted. Hashes, HMAC and
//! PBKDF2 come from ring; the block ciphers from RustCrypto. Input must be DER (definite lengths),
//! which every current exporter writes.

use cbc::cipher::{BlockCipherDecrypt, BlockModeDecrypt, InnerIvInit, KeyInit};
use ring::{digest, hmac, pbkdf2};

/// The highest iteration count accepted for one key derivation: real archives use 2,000 to
/// 100,000; the bound keeps a hostile archive from occupying a controller.
const MAX_ITERATIONS: u32 = 1_000_000;

// Object identifiers, as the bytes of their DER encoding.
/// 1.2.840.113549.1.7.1 (PKCS#7 data)
const DATA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x07, 0x01];
/// 1.2.840.113549.1.7.6 (PKCS#7 encryptedData)
const ENCRYPTED_DATA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x07, 0x06];
/// 1.2.840.113549.1.12.10.1.1
const KEY_BAG: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x0c, 0x0a, 0x01, 0x01];
/// 1.2.840.113549.1.12.10.1.2
const SHROUDED_KEY_BAG: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x0c, 0x0a, 0x01, 0x02];
/// 1.2.840.113549.1.12.10.1.3
const CERT_BAG: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x0c, 0x0a, 0x01, 0x03];
/// 1.2.840.113549.1.9.22.1
const X509_CERTIFICATE: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x09, 0x16, 0x01];
/// 1.2.840.113549.1.12.1.3
const PBE_SHA1_3DES: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x0c, 0x01, 0x03];
/// 1.2.840.113549.1.12.1.4
const PBE_SHA1_2DES: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x0c, 0x01, 0x04];
/// 1.2.840.113549.1.12.1.5
const PBE_SHA1_RC2_128: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x0c, 0x01, 0x05];
/// 1.2.840.113549.1.12.1.6
const PBE_SHA1_RC2_40: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x0c, 0x01, 0x06];
/// 1.2.840.113549.1.5.13
const PBES2: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x05, 0x0d];
/// 1.2.840.113549.1.5.12
const PBKDF2: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x05, 0x0c];
/// 1.2.840.113549.2.7, .9, .10, .11
const HMAC_SHA1: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x02, 0x07];
const HMAC_SHA256: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x02, 0x09];
const HMAC_SHA384: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x02, 0x0a];
const HMAC_SHA512: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x02, 0x0b];
/// 2.16.840.1.101.3.4.1.2, .22, .42
const AES128_CBC: &[u8] = &[0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x01, 0x02];
const AES192_CBC: &[u8] = &[0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x01, 0x16];
const AES256_CBC: &[u8] = &[0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x01, 0x2a];
/// 1.2.840.113549.3.7
const DES_EDE3_CBC: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x03, 0x07];
/// 1.3.14.3.2.26, 2.16.840.1.101.3.4.2.1, .2, .3
const SHA1: &[u8] = &[0x2b, 0x0e, 0x03, 0x02, 0x1a];
const SHA256: &[u8] = &[0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01];
const SHA384: &[u8] = &[0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x02];
const SHA512: &[u8] = &[0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x03];

const SEQUENCE: u8 = 0x30;
const INTEGER: u8 = 0x02;
const OCTET_STRING: u8 = 0x04;
const OID: u8 = 0x06;
const CONTEXT_0: u8 = 0xa0;
const CONTEXT_0_PRIMITIVE: u8 = 0x80;

/// What an archive holds: DER certificates and PKCS#8 private keys, in archive order.
#[derive(Default)]
pub(super) struct Contents {
    pub(super) certificates: Vec<Vec<u8>>,
    pub(super) keys: Vec<Vec<u8>>,
}

/// Reads an archive protected by `password` (empty for none).
///
/// # Errors
/// A message naming what is wrong: the password, the structure, or an unsupported algorithm.
pub(super) fn read(data: &[u8], password: &str) -> Result<Contents, String> {
    let mut pfx = Der::new(data).read(SEQUENCE)?;
    if pfx.integer()? != 3 {
        return Err("unsupported PKCS#12 version".into());
    }
    let mut auth_safe = pfx.read(SEQUENCE)?;
    if auth_safe.read(OID)?.bytes != DATA {
        return Err("public-key protected (signed) archives are not supported".into());
    }
    let safe = auth_safe.read(CONTEXT_0)?.read(OCTET_STRING)?.bytes;
    // An empty password has two encodings in the wild (the terminator alone, or nothing): the
    // one the MAC was made with is used to decrypt too.
    let encodings = bmp_encodings(password);
    let bmp = if pfx.is_empty() {
        encodings[0].as_slice()
    } else {
        verify_mac(pfx.read(SEQUENCE)?, safe, &encodings)?
    };
    let mut contents = Contents::default();
    let mut infos = Der::new(safe).read(SEQUENCE)?;
    while !infos.is_empty() {
        let mut info = infos.read(SEQUENCE)?;
        let kind = info.read(OID)?.bytes;
        let mut content = info.read(CONTEXT_0)?;
        let bags = if kind == DATA {
            content.read(OCTET_STRING)?.bytes.to_vec()
        } else if kind == ENCRYPTED_DATA {
            let mut encrypted = content.read(SEQUENCE)?;
            encrypted.integer()?;
            let mut info = encrypted.read(SEQUENCE)?;
            info.read(OID)?;
            let algorithm = info.read(SEQUENCE)?;
            let ciphertext = info.implicit_octets()?;
            decrypt(algorithm, &ciphertext, password, bmp)?
        } else {
            return Err("the archive holds content of an unsupported type".into());
        };
        read_bags(&bags, password, bmp, &mut contents)?;
    }
    Ok(contents)
}

fn read_bags(data: &[u8], password: &str, bmp: &[u8], contents: &mut Contents) -> Result<(), String> {
    let mut bags = Der::new(data).read(SEQUENCE)?;
    while !bags.is_empty() {
        let mut bag = bags.read(SEQUENCE)?;
        let kind = bag.read(OID)?.bytes;
        let mut value = bag.read(CONTEXT_0)?;
        if kind == KEY_BAG {
            contents.keys.push(value.bytes.to_vec());
        } else if kind == SHROUDED_KEY_BAG {
            let mut shrouded = value.read(SEQUENCE)?;
            let algorithm = shrouded.read(SEQUENCE)?;
            let ciphertext = shrouded.read(OCTET_STRING)?.bytes;
            contents.keys.push(decrypt(algorithm, ciphertext, password, bmp)?);
        } else if kind == CERT_BAG {
            let mut cert = value.read(SEQUENCE)?;
            if cert.read(OID)?.bytes == X509_CERTIFICATE {
                let der = cert.read(CONTEXT_0)?.read(OCTET_STRING)?.bytes;
                contents.certificates.push(der.to_vec());
            }
        }
        // Other bags (CRLs, secrets) carry nothing a client certificate needs.
    }
    Ok(())
}

/// The password as BMPString (UTF-16 big-endian with a terminator), as the MAC and the legacy
/// algorithms take it; an empty password also as nothing.
fn bmp_encodings(password: &str) -> Vec<Vec<u8>> {
    let mut encoded: Vec<u8> = password.encode_utf16().flat_map(u16::to_be_bytes).collect();
    encoded.extend([0, 0]);
    let mut encodings = vec![encoded];
    if password.is_empty() {
        encodings.push(Vec::new());
    }
    encodings
}

/// Checks the archive's MAC and returns the password encoding that produced it.
fn verify_mac<'p>(mut mac_data: Der<'_>, safe: &[u8], passwords: &'p [Vec<u8>]) -> Result<&'p [u8], String> {
    let mut digest_info = mac_data.read(SEQUENCE)?;
    let hash = Hash::from_digest_oid(digest_info.read(SEQUENCE)?.read(OID)?.bytes)
        .ok_or("the archive's MAC uses an unsupported algorithm")?;
    let expected = digest_info.read(OCTET_STRING)?.bytes;
    let salt = mac_data.read(OCTET_STRING)?.bytes;
    let iterations = if mac_data.is_empty() {
        1
    } else {
        mac_data.iterations()?
    };
    passwords
        .iter()
        .find(|password| {
            let key = pkcs12_kdf(hash, password, salt, 3, iterations, hash.digest().output_len());
            hmac::verify(&hmac::Key::new(hash.hmac(), &key), safe, expected).is_ok()
        })
        .map(Vec::as_slice)
        .ok_or_else(|| "wrong password (the archive's integrity check failed)".to_owned())
}

/// Decrypts `ciphertext` with the password-based scheme named by `algorithm`.
fn decrypt(mut algorithm: Der<'_>, ciphertext: &[u8], password: &str, bmp: &[u8]) -> Result<Vec<u8>, String> {
    let oid = algorithm.read(OID)?.bytes;
    if oid == PBES2 {
        return pbes2(algorithm.read(SEQUENCE)?, ciphertext, password.as_bytes());
    }
    let key_len = match oid {
        PBE_SHA1_3DES => 24,
        PBE_SHA1_2DES | PBE_SHA1_RC2_128 => 16,
        PBE_SHA1_RC2_40 => 5,
        _ => return Err("the archive is encrypted with an unsupported algorithm".into()),
    };
    let mut parameters = algorithm.read(SEQUENCE)?;
    let salt = parameters.read(OCTET_STRING)?.bytes;
    let iterations = parameters.iterations()?;
    let key = pkcs12_kdf(Hash::Sha1, bmp, salt, 1, iterations, key_len);
    let iv = pkcs12_kdf(Hash::Sha1, bmp, salt, 2, iterations, 8);
    match oid {
        PBE_SHA1_3DES => cbc_decrypt(des::TdesEde3::new_from_slice(&key), &iv, ciphertext),
        PBE_SHA1_2DES => cbc_decrypt(des::TdesEde2::new_from_slice(&key), &iv, ciphertext),
        // RC2's effective key length is the key's, in bits.
        _ => cbc_decrypt(
            Ok::<_, ()>(rc2::Rc2::new_with_eff_key_len(&key, key_len * 8)),
            &iv,
            ciphertext,
        ),
    }
}

/// PBES2 (RFC 8018) with PBKDF2 and AES-CBC or 3DES-CBC; the password is taken as UTF-8.
fn pbes2(mut parameters: Der<'_>, ciphertext: &[u8], password: &[u8]) -> Result<Vec<u8>, String> {
    let mut kdf = parameters.read(SEQUENCE)?;
    if kdf.read(OID)?.bytes != PBKDF2 {
        return Err("the archive uses a PBES2 key derivation other than PBKDF2".into());
    }
    let mut kdf = kdf.read(SEQUENCE)?;
    let salt = kdf.read(OCTET_STRING)?.bytes;
    let iterations = kdf.iterations()?;
    if kdf.peek() == Some(INTEGER) {
        kdf.integer()?; // The key length, which the cipher below fixes anyway.
    }
    let prf = if kdf.is_empty() {
        Hash::Sha1
    } else {
        Hash::from_hmac_oid(kdf.read(SEQUENCE)?.read(OID)?.bytes)
            .ok_or("the archive's PBKDF2 uses an unsupported pseudo-random function")?
    };
    let mut scheme = parameters.read(SEQUENCE)?;
    let cipher = scheme.read(OID)?.bytes;
    let iv = scheme.read(OCTET_STRING)?.bytes;
    let key_len = match cipher {
        AES128_CBC => 16,
        AES192_CBC | DES_EDE3_CBC => 24,
        AES256_CBC => 32,
        _ => return Err("the archive is encrypted with an unsupported PBES2 cipher".into()),
    };
    let mut key = vec![0; key_len];
    let rounds = std::num::NonZeroU32::new(iterations).ok_or("an iteration count is zero")?;
    pbkdf2::derive(prf.pbkdf2(), rounds, salt, password, &mut key);
    match cipher {
        AES128_CBC => cbc_decrypt(aes::Aes128::new_from_slice(&key), iv, ciphertext),
        AES192_CBC => cbc_decrypt(aes::Aes192::new_from_slice(&key), iv, ciphertext),
        AES256_CBC => cbc_decrypt(aes::Aes256::new_from_slice(&key), iv, ciphertext),
        _ => cbc_decrypt(des::TdesEde3::new_from_slice(&key), iv, ciphertext),
    }
}

/// CBC decryption with PKCS#7 padding, whose check is what reveals a wrong password when the
/// archive has no MAC.
fn cbc_decrypt<C: BlockCipherDecrypt, E>(
    cipher: Result<C, E>,
    iv: &[u8],
    data: &[u8],
) -> Result<Vec<u8>, String> {
    let unreadable = || "cannot decrypt the archive: wrong password or damaged content".to_owned();
    let cipher = cipher.map_err(|_| unreadable())?;
    let mut mode = cbc::Decryptor::inner_iv_slice_init(cipher, iv).map_err(|_| unreadable())?;
    let size = C::block_size();
    if data.is_empty() || !data.len().is_multiple_of(size) {
        return Err(unreadable());
    }
    let mut plain = Vec::with_capacity(data.len());
    for chunk in data.chunks_exact(size) {
        let mut block = cbc::cipher::Block::<C>::try_from(chunk).map_err(|_| unreadable())?;
        mode.decrypt_block(&mut block);
        plain.extend_from_slice(&block);
    }
    let pad = usize::from(*plain.last().ok_or_else(unreadable)?);
    if pad == 0
        || pad > size
        || !plain[plain.len() - pad..]
            .iter()
            .all(|&byte| usize::from(byte) == pad)
    {
        return Err(unreadable());
    }
    plain.truncate(plain.len() - pad);
    Ok(plain)
}

/// The hashes the archive's MAC and key derivations may use.
#[derive(Clone, Copy)]
enum Hash {
    Sha1,
    Sha256,
    Sha384,
    Sha512,
}

impl Hash {
    fn from_digest_oid(oid: &[u8]) -> Option<Self> {
        [
            (SHA1, Self::Sha1),
            (SHA256, Self::Sha256),
            (SHA384, Self::Sha384),
            (SHA512, Self::Sha512),
        ]
        .into_iter()
        .find_map(|(known, hash)| (known == oid).then_some(hash))
    }

    fn from_hmac_oid(oid: &[u8]) -> Option<Self> {
        [
            (HMAC_SHA1, Self::Sha1),
            (HMAC_SHA256, Self::Sha256),
            (HMAC_SHA384, Self::Sha384),
            (HMAC_SHA512, Self::Sha512),
        ]
        .into_iter()
        .find_map(|(known, hash)| (known == oid).then_some(hash))
    }

    fn digest(self) -> &'static digest::Algorithm {
        match self {
            Self::Sha1 => &digest::SHA1_FOR_LEGACY_USE_ONLY,
            Self::Sha256 => &digest::SHA256,
            Self::Sha384 => &digest::SHA384,
            Self::Sha512 => &digest::SHA512,
        }
    }

    fn hmac(self) -> hmac::Algorithm {
        match self {
            Self::Sha1 => hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY,
            Self::Sha256 => hmac::HMAC_SHA256,
            Self::Sha384 => hmac::HMAC_SHA384,
            Self::Sha512 => hmac::HMAC_SHA512,
        }
    }

    fn pbkdf2(self) -> pbkdf2::Algorithm {
        match self {
            Self::Sha1 => pbkdf2::PBKDF2_HMAC_SHA1,
            Self::Sha256 => pbkdf2::PBKDF2_HMAC_SHA256,
            Self::Sha384 => pbkdf2::PBKDF2_HMAC_SHA384,
            Self::Sha512 => pbkdf2::PBKDF2_HMAC_SHA512,
        }
    }
}

/// The key derivation of RFC 7292 appendix B: `id` 1 gives keys, 2 IVs, 3 MAC keys.
fn pkcs12_kdf(hash: Hash, password: &[u8], salt: &[u8], id: u8, iterations: u32, len: usize) -> Vec<u8> {
    let algorithm = hash.digest();
    let v = algorithm.block_len();
    // Salt and password each repeated to a whole number of v-byte blocks.
    let fill = |source: &[u8]| -> Vec<u8> {
        source
            .iter()
            .copied()
            .cycle()
            .take(source.len().div_ceil(v) * v)
            .collect()
    };
    let mut input = fill(salt);
    input.extend(fill(password));
    let diversifier = vec![id; v];
    let mut output = Vec::with_capacity(len);
    loop {
        let mut context = digest::Context::new(algorithm);
        context.update(&diversifier);
        context.update(&input);
        let mut block = context.finish();
        for _ in 1..iterations {
            block = digest::digest(algorithm, block.as_ref());
        }
        let block = block.as_ref();
        output.extend_from_slice(&block[..block.len().min(len - output.len())]);
        if output.len() == len {
            return output;
        }
        // Each v-byte block of the input becomes (block + B + 1) mod 2^(8v), B being the hash
        // repeated to v bytes: big-endian addition with carry.
        let b: Vec<u8> = block.iter().copied().cycle().take(v).collect();
        for chunk in input.chunks_mut(v) {
            let mut carry = 1u16;
            for (byte, add) in chunk.iter_mut().zip(&b).rev() {
                let sum = u16::from(*byte) + u16::from(*add) + carry;
                *byte = sum.to_le_bytes()[0];
                carry = sum >> 8;
            }
        }
    }
}

/// A cursor over DER: one value at a time, definite lengths only.
struct Der<'a> {
    bytes: &'a [u8],
}

impl<'a> Der<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Self { bytes }
    }

    fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.first().copied()
    }

    /// The next value's tag and content.
    fn next(&mut self) -> Result<(u8, Der<'a>), String> {
        let malformed = || "the archive is not valid DER (truncated or corrupt)".to_owned();
        let (&tag, rest) = self.bytes.split_first().ok_or_else(malformed)?;
        let (&first, rest) = rest.split_first().ok_or_else(malformed)?;
        let (len, rest) =
            match first {
                0..=0x7f => (usize::from(first), rest),
                0x80 => return Err(
                    "indefinite-length (BER) encodings are not supported; re-export the archive with openssl"
                        .into(),
                ),
                _ => {
                    let count = usize::from(first & 0x7f);
                    if count > 4 || rest.len() < count {
                        return Err(malformed());
                    }
                    let len = rest[..count]
                        .iter()
                        .fold(0usize, |len, &byte| (len << 8) | usize::from(byte));
                    (len, &rest[count..])
                }
            };
        if rest.len() < len {
            return Err(malformed());
        }
        let (content, rest) = rest.split_at(len);
        self.bytes = rest;
        Ok((tag, Der::new(content)))
    }

    /// The next value, which must have `tag`.
    fn read(&mut self, tag: u8) -> Result<Der<'a>, String> {
        match self.next()? {
            (found, content) if found == tag => Ok(content),
            _ => Err("the archive does not have the PKCS#12 structure".into()),
        }
    }

    /// A non-negative INTEGER that fits 32 bits.
    fn integer(&mut self) -> Result<u32, String> {
        let bytes = self.read(INTEGER)?.bytes;
        let digits = bytes.strip_prefix(&[0]).unwrap_or(bytes);
        if bytes.is_empty() || bytes[0] & 0x80 != 0 || digits.len() > 4 {
            return Err("the archive holds an integer out of range".into());
        }
        Ok(digits
            .iter()
            .fold(0, |value, &byte| (value << 8) | u32::from(byte)))
    }

    /// An iteration count within bounds.
    fn iterations(&mut self) -> Result<u32, String> {
        match self.integer()? {
            0 => Err("an iteration count is zero".into()),
            count if count > MAX_ITERATIONS => Err(format!(
                "an iteration count of {count} exceeds the {MAX_ITERATIONS} accepted"
            )),
            count => Ok(count),
        }
    }

    /// `[0] IMPLICIT OCTET STRING`: primitive, or constructed from OCTET STRING pieces.
    fn implicit_octets(&mut self) -> Result<Vec<u8>, String> {
        match self.next()? {
            (CONTEXT_0_PRIMITIVE, content) => Ok(content.bytes.to_vec()),
            (CONTEXT_0, mut pieces) => {
                let mut joined = Vec::new();
                while !pieces.is_empty() {
                    joined.extend_from_slice(pieces.read(OCTET_STRING)?.bytes);
                }
                Ok(joined)
            }
            _ => Err("the archive does not have the PKCS#12 structure".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Contents, read};

    const MODERN: &[u8] = include_bytes!("../../../tests/fixtures/client-certificate.pfx");
    const LEGACY: &[u8] = include_bytes!("../../../tests/fixtures/client-certificate-legacy.pfx");
    const EMPTY_PASSWORD: &[u8] =
        include_bytes!("../../../tests/fixtures/client-certificate-empty-password.pfx");
    const UNENCRYPTED: &[u8] = include_bytes!("../../../tests/fixtures/client-certificate-unencrypted.pfx");

    fn counts(contents: &Contents) -> (usize, usize) {
        (contents.certificates.len(), contents.keys.len())
    }

    #[test]
    fn every_fixture_opens_with_its_password() {
        assert_eq!(counts(&read(MODERN, "test-password").unwrap()), (1, 1));
        // The legacy archive carries its CA too.
        assert_eq!(counts(&read(LEGACY, "test-password").unwrap()), (2, 1));
        assert_eq!(counts(&read(EMPTY_PASSWORD, "").unwrap()), (1, 1));
        assert_eq!(counts(&read(UNENCRYPTED, "test-password").unwrap()), (1, 1));
        let modern = read(MODERN, "test-password").unwrap();
        let legacy = read(LEGACY, "test-password").unwrap();
        assert_eq!(modern.keys, legacy.keys, "both hold the same PKCS#8 key");
        assert_eq!(modern.certificates[0], legacy.certificates[0]);
    }

    #[test]
    fn a_wrong_password_fails_the_integrity_check() {
        for (archive, wrong) in [
            (MODERN, "nope"),
            (LEGACY, ""),
            (EMPTY_PASSWORD, "x"),
            (UNENCRYPTED, ""),
        ] {
            let err = read(archive, wrong).err().unwrap();
            assert_eq!(err, "wrong password (the archive's integrity check failed)");
        }
    }

    #[test]
    fn damaged_archives_are_refused_without_panicking() {
        assert!(read(b"", "").err().unwrap().contains("not valid DER"));
        assert!(
            read(&[0x30, 0x80, 0, 0], "")
                .err()
                .unwrap()
                .contains("indefinite-length")
        );
        for len in [1, 10, 100, MODERN.len() / 2, MODERN.len() - 1] {
            assert!(
                read(&MODERN[..len], "test-password").is_err(),
                "truncated at {len}"
            );
        }
        // A flipped byte inside the authenticated content breaks the MAC.
        let mut flipped = MODERN.to_vec();
        flipped[200] ^= 1;
        assert!(read(&flipped, "test-password").is_err());
    }
}
