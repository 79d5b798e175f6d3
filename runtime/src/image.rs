//! Image content for tool results: PNG only, checked structurally and
//! bounded in bytes and dimensions before it becomes MCP image content.

use base64::Engine as _;
use rmcp::model::ContentBlock;

/// Ceiling on the encoded size of an image, in bytes.
pub const MAX_IMAGE_BYTES: usize = 4 * 1024 * 1024;
/// Ceiling on the width and on the height, in pixels.
pub const MAX_IMAGE_DIMENSION: u32 = 8192;
/// Ceiling on width × height, in pixels.
pub const MAX_IMAGE_PIXELS: u64 = 16 * 1024 * 1024;

/// The MIME type of every [`Image`].
pub const PNG_MIME_TYPE: &str = "image/png";

const SIGNATURE: &[u8; 8] = b"\x89PNG\r\n\x1a\n";
/// Ceiling on the number of chunks walked.
const MAX_CHUNKS: usize = 100_000;

/// Why an image was refused. The texts are fixed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ImageError {
    /// Larger than [`MAX_IMAGE_BYTES`].
    #[error("the image exceeds the size limit")]
    TooLarge,
    /// Not a PNG file (signature or first chunk wrong).
    #[error("the image is not a PNG file")]
    NotPng,
    /// A PNG with a broken structure (chunk lengths, checksums, header
    /// fields, missing end).
    #[error("the image is a malformed PNG file")]
    Malformed,
    /// Width or height zero, above [`MAX_IMAGE_DIMENSION`], or more than
    /// [`MAX_IMAGE_PIXELS`].
    #[error("the image dimensions exceed the limit")]
    DimensionsTooLarge,
}

/// A checked PNG image, ready to be returned as MCP image content.
///
/// [`Image::png`] accepts a byte buffer only if it is at most
/// [`MAX_IMAGE_BYTES`], starts with the PNG signature and an `IHDR` chunk
/// with valid fields and dimensions within [`MAX_IMAGE_DIMENSION`] and
/// [`MAX_IMAGE_PIXELS`], and is a well-formed sequence of chunks with
/// correct CRCs ending in `IEND`, with nothing after it. Pixel data is not
/// decoded.
///
/// ```
/// use hardened_mcp::image::{Image, ImageError};
///
/// assert_eq!(Image::png(b"GIF89a....".to_vec()).unwrap_err(), ImageError::NotPng);
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Image {
    bytes: Vec<u8>,
    width: u32,
    height: u32,
}

impl std::fmt::Debug for Image {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Image")
            .field("bytes", &self.bytes.len())
            .field("width", &self.width)
            .field("height", &self.height)
            .finish()
    }
}

impl Image {
    /// Checks a PNG file's bytes.
    pub fn png(bytes: Vec<u8>) -> Result<Self, ImageError> {
        if bytes.len() > MAX_IMAGE_BYTES {
            return Err(ImageError::TooLarge);
        }
        let (width, height) = check_png(&bytes)?;
        Ok(Self {
            bytes,
            width,
            height,
        })
    }

    /// Width in pixels.
    pub fn width(&self) -> u32 {
        self.width
    }

    /// Height in pixels.
    pub fn height(&self) -> u32 {
        self.height
    }

    /// The PNG file's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The MIME type, `image/png`.
    pub fn mime_type(&self) -> &'static str {
        PNG_MIME_TYPE
    }

    /// MCP image content: base64 data and MIME type.
    pub fn into_content(self) -> ContentBlock {
        let data = base64::engine::general_purpose::STANDARD.encode(&self.bytes);
        ContentBlock::image(data, PNG_MIME_TYPE)
    }
}

impl From<Image> for ContentBlock {
    fn from(image: Image) -> Self {
        image.into_content()
    }
}

fn be_u32(bytes: &[u8], at: usize) -> Option<u32> {
    let b = bytes.get(at..at.checked_add(4)?)?;
    Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

/// Walks the chunks; returns the dimensions from `IHDR`.
fn check_png(bytes: &[u8]) -> Result<(u32, u32), ImageError> {
    if bytes.len() < SIGNATURE.len() + 25 || !bytes.starts_with(SIGNATURE) {
        return Err(ImageError::NotPng);
    }
    if &bytes[12..16] != b"IHDR" {
        return Err(ImageError::NotPng);
    }
    let mut at = SIGNATURE.len();
    let mut dimensions = None;
    for index in 0..MAX_CHUNKS {
        let len = be_u32(bytes, at).ok_or(ImageError::Malformed)?;
        if len > i32::MAX as u32 {
            return Err(ImageError::Malformed);
        }
        let len = len as usize;
        let kind_at = at + 4;
        let data_at = kind_at + 4;
        let crc_at = data_at.checked_add(len).ok_or(ImageError::Malformed)?;
        let stored_crc = be_u32(bytes, crc_at).ok_or(ImageError::Malformed)?;
        let kind = &bytes[kind_at..data_at];
        if !kind.iter().all(u8::is_ascii_alphabetic) {
            return Err(ImageError::Malformed);
        }
        if crc32(&bytes[kind_at..crc_at]) != stored_crc {
            return Err(ImageError::Malformed);
        }
        let data = &bytes[data_at..crc_at];
        match (index, kind) {
            (0, b"IHDR") => dimensions = Some(check_header(data)?),
            (0, _) | (_, b"IHDR") => return Err(ImageError::Malformed),
            (_, b"IEND") => {
                return if len == 0 && crc_at + 4 == bytes.len() {
                    dimensions.ok_or(ImageError::Malformed)
                } else {
                    Err(ImageError::Malformed)
                };
            }
            _ => {}
        }
        at = crc_at + 4;
    }
    Err(ImageError::Malformed)
}

fn check_header(data: &[u8]) -> Result<(u32, u32), ImageError> {
    let [
        w0,
        w1,
        w2,
        w3,
        h0,
        h1,
        h2,
        h3,
        depth,
        colour,
        compression,
        filter,
        interlace,
    ] = data
    else {
        return Err(ImageError::Malformed);
    };
    let width = u32::from_be_bytes([*w0, *w1, *w2, *w3]);
    let height = u32::from_be_bytes([*h0, *h1, *h2, *h3]);
    let depth_ok = match colour {
        0 => matches!(depth, 1 | 2 | 4 | 8 | 16),
        3 => matches!(depth, 1 | 2 | 4 | 8),
        2 | 4 | 6 => matches!(depth, 8 | 16),
        _ => false,
    };
    if !depth_ok || *compression != 0 || *filter != 0 || *interlace > 1 {
        return Err(ImageError::Malformed);
    }
    if width == 0
        || height == 0
        || width > MAX_IMAGE_DIMENSION
        || height > MAX_IMAGE_DIMENSION
        || u64::from(width) * u64::from(height) > MAX_IMAGE_PIXELS
    {
        return Err(ImageError::DimensionsTooLarge);
    }
    Ok((width, height))
}

const CRC_TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut n = 0;
    while n < 256 {
        let mut c = n as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        table[n] = c;
        n += 1;
    }
    table
};

/// The CRC-32 of PNG chunks (ISO 3309 / ITU-T V.42).
pub(crate) fn crc32(bytes: &[u8]) -> u32 {
    let mut c = 0xFFFF_FFFFu32;
    for b in bytes {
        c = CRC_TABLE[((c ^ u32::from(*b)) & 0xFF) as usize] ^ (c >> 8);
    }
    c ^ 0xFFFF_FFFF
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_of_known_values() {
        assert_eq!(crc32(b""), 0);
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b"IEND"), 0xAE42_6082);
    }
}
