//! PNG image content: well-formed PNGs within the ceilings become MCP image
//! content; everything else is refused with a fixed error.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use base64::Engine as _;
use hardened_mcp::image::{
    Image, ImageError, MAX_IMAGE_BYTES, MAX_IMAGE_DIMENSION, MAX_IMAGE_PIXELS,
};
use rmcp::model::ContentBlock;

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

fn chunk(kind: &[u8; 4], data: &[u8]) -> Vec<u8> {
    let mut out = (data.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    let mut covered = kind.to_vec();
    covered.extend_from_slice(data);
    out.extend_from_slice(&crc32(&covered).to_be_bytes());
    out
}

fn ihdr(width: u32, height: u32, depth: u8, colour: u8) -> Vec<u8> {
    let mut d = width.to_be_bytes().to_vec();
    d.extend_from_slice(&height.to_be_bytes());
    d.extend_from_slice(&[depth, colour, 0, 0, 0]);
    chunk(b"IHDR", &d)
}

/// A real, decodable RGB8 PNG: zlib stream with one stored deflate block.
fn png(width: u32, height: u32) -> Vec<u8> {
    let mut raw = Vec::new();
    for y in 0..height {
        raw.push(0);
        for x in 0..width {
            raw.extend_from_slice(&[(x * 40) as u8, (y * 40) as u8, 200]);
        }
    }
    let mut z = vec![0x78, 0x01, 0x01];
    z.extend_from_slice(&(raw.len() as u16).to_le_bytes());
    z.extend_from_slice(&(!(raw.len() as u16)).to_le_bytes());
    z.extend_from_slice(&raw);
    let (mut a, mut b) = (1u32, 0u32);
    for &byte in &raw {
        a = (a + u32::from(byte)) % 65521;
        b = (b + a) % 65521;
    }
    z.extend_from_slice(&((b << 16) | a).to_be_bytes());
    assemble(&[
        ihdr(width, height, 8, 2),
        chunk(b"IDAT", &z),
        chunk(b"IEND", &[]),
    ])
}

fn assemble(chunks: &[Vec<u8>]) -> Vec<u8> {
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    for c in chunks {
        out.extend_from_slice(c);
    }
    out
}

#[test]
fn a_valid_png_becomes_image_content() {
    let bytes = png(3, 2);
    let image = Image::png(bytes.clone()).unwrap();
    assert_eq!(
        (image.width(), image.height(), image.mime_type()),
        (3, 2, "image/png")
    );
    let content: ContentBlock = image.into();
    let json = serde_json::to_value(&content).unwrap();
    assert_eq!(json["type"], "image");
    assert_eq!(json["mimeType"], "image/png");
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(json["data"].as_str().unwrap())
        .unwrap();
    assert_eq!(decoded, bytes);
}

#[test]
fn not_png_is_refused() {
    for bytes in [
        Vec::new(),
        b"GIF89a\x01\x00\x01\x00".to_vec(),
        b"\x89PNG\r\n\x1a\n".to_vec(),
        b"<svg onload=alert(1)>".to_vec(),
        // JPEG magic, then a PNG later in the file (a polyglot).
        [b"\xff\xd8\xff\xe0".as_slice(), &png(1, 1)].concat(),
        // PNG signature with a different first chunk.
        assemble(&[
            chunk(b"tEXt", b"a\0b"),
            ihdr(1, 1, 8, 2),
            chunk(b"IEND", &[]),
        ]),
    ] {
        assert_eq!(Image::png(bytes).unwrap_err(), ImageError::NotPng);
    }
}

#[test]
fn malformed_png_is_refused() {
    let good = png(2, 2);
    let mut bad_crc = good.clone();
    bad_crc[29] ^= 1;
    let truncated = good[..good.len() - 6].to_vec();
    let trailing = [good.as_slice(), b"<?php system($_GET[c]); ?>"].concat();
    let mut huge_len = good.clone();
    huge_len[33..37].copy_from_slice(&u32::MAX.to_be_bytes());
    let no_iend = assemble(&[ihdr(1, 1, 8, 2), chunk(b"IDAT", &[0; 4])]);
    let two_ihdr = assemble(&[ihdr(1, 1, 8, 2), ihdr(1, 1, 8, 2), chunk(b"IEND", &[])]);
    let bad_depth = assemble(&[ihdr(1, 1, 3, 2), chunk(b"IEND", &[])]);
    let bad_colour = assemble(&[ihdr(1, 1, 8, 5), chunk(b"IEND", &[])]);
    let iend_with_data = assemble(&[ihdr(1, 1, 8, 2), chunk(b"IEND", b"x")]);
    let bad_kind = assemble(&[ihdr(1, 1, 8, 2), chunk(b"ID\0T", &[]), chunk(b"IEND", &[])]);
    for (name, bytes) in [
        ("bad crc", bad_crc),
        ("truncated", truncated),
        ("trailing", trailing),
        ("huge length", huge_len),
        ("no iend", no_iend),
        ("two ihdr", two_ihdr),
        ("bad depth", bad_depth),
        ("bad colour", bad_colour),
        ("iend with data", iend_with_data),
        ("bad chunk type", bad_kind),
    ] {
        assert_eq!(
            Image::png(bytes).unwrap_err(),
            ImageError::Malformed,
            "{name}"
        );
    }
}

#[test]
fn dimensions_are_bounded() {
    let side = (MAX_IMAGE_PIXELS as f64).sqrt() as u32 + 1;
    for (w, h) in [
        (0, 1),
        (1, 0),
        (MAX_IMAGE_DIMENSION + 1, 1),
        (1, MAX_IMAGE_DIMENSION + 1),
        (side, side),
        (u32::MAX, u32::MAX),
    ] {
        let bytes = assemble(&[ihdr(w, h, 8, 2), chunk(b"IEND", &[])]);
        assert_eq!(
            Image::png(bytes).unwrap_err(),
            ImageError::DimensionsTooLarge,
            "{w}x{h}"
        );
    }
    let edge = assemble(&[ihdr(MAX_IMAGE_DIMENSION, 1, 8, 2), chunk(b"IEND", &[])]);
    assert!(Image::png(edge).is_ok());
}

#[test]
fn size_is_bounded() {
    let filler = vec![0u8; MAX_IMAGE_BYTES];
    let big = assemble(&[
        ihdr(1, 1, 8, 2),
        chunk(b"zzZz", &filler),
        chunk(b"IEND", &[]),
    ]);
    assert_eq!(Image::png(big).unwrap_err(), ImageError::TooLarge);
    // Signature, IHDR and IEND take 8 + 25 + 12 bytes, the filler chunk 12 more.
    let room = MAX_IMAGE_BYTES - (8 + 25 + 12 + 12);
    let fits = assemble(&[
        ihdr(1, 1, 8, 2),
        chunk(b"zzZz", &vec![0u8; room]),
        chunk(b"IEND", &[]),
    ]);
    assert_eq!(fits.len(), MAX_IMAGE_BYTES);
    assert!(Image::png(fits).is_ok());
}

#[test]
fn errors_are_fixed_texts() {
    for e in [
        ImageError::TooLarge,
        ImageError::NotPng,
        ImageError::Malformed,
        ImageError::DimensionsTooLarge,
    ] {
        assert!(e.to_string().starts_with("the image "));
    }
}
