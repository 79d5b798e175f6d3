//! Audio content for tool results: uncompressed PCM WAV only, checked
//! structurally and bounded in bytes before it becomes MCP audio content
//! (a sonification of a signal, a simulated circuit's output).

use base64::Engine as _;
use rmcp::model::ContentBlock;

/// Ceiling on the size of a WAV file, in bytes.
pub const MAX_AUDIO_BYTES: usize = 4 * 1024 * 1024;
/// The MIME type of every [`Audio`].
pub const WAV_MIME_TYPE: &str = "audio/wav";
/// Most channels accepted.
pub const MAX_CHANNELS: u16 = 8;
/// Highest sample rate accepted, in hertz.
pub const MAX_SAMPLE_RATE: u32 = 384_000;

/// Why audio was refused. The texts are fixed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AudioError {
    /// Larger than [`MAX_AUDIO_BYTES`].
    #[error("the audio exceeds the size limit")]
    TooLarge,
    /// Not a RIFF WAVE file.
    #[error("the audio is not a WAV file")]
    NotWav,
    /// A WAV file with a broken structure (chunk sizes, a missing `fmt ` or
    /// `data` chunk, bytes after the RIFF chunk) or a format other than
    /// integer PCM within [`MAX_CHANNELS`] and [`MAX_SAMPLE_RATE`].
    #[error("the audio is a malformed or unsupported WAV file")]
    Malformed,
}

/// A checked WAV file, ready to be returned as MCP audio content.
///
/// [`Audio::wav`] accepts a byte buffer only if it is at most
/// [`MAX_AUDIO_BYTES`], a RIFF `WAVE` file whose declared size is its
/// length, made of whole chunks, with one `fmt ` chunk of integer PCM (1
/// to [`MAX_CHANNELS`] channels, 1 Hz to [`MAX_SAMPLE_RATE`], 8, 16, 24
/// or 32 bits, consistent block alignment and byte rate) before one
/// `data` chunk holding whole frames. Samples are not decoded.
///
/// ```
/// use hardened_mcp::audio::{Audio, AudioError};
///
/// assert_eq!(Audio::wav(b"OggS....".to_vec()).unwrap_err(), AudioError::NotWav);
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Audio {
    bytes: Vec<u8>,
    frames: u64,
    sample_rate: u32,
}

impl std::fmt::Debug for Audio {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Audio")
            .field("bytes", &self.bytes.len())
            .field("frames", &self.frames)
            .field("sample_rate", &self.sample_rate)
            .finish()
    }
}

impl Audio {
    /// Checks a WAV file's bytes.
    pub fn wav(bytes: Vec<u8>) -> Result<Self, AudioError> {
        if bytes.len() > MAX_AUDIO_BYTES {
            return Err(AudioError::TooLarge);
        }
        let (frames, sample_rate) = check_wav(&bytes)?;
        Ok(Self {
            bytes,
            frames,
            sample_rate,
        })
    }

    /// Sample frames (one sample per channel each).
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Frames per second.
    pub fn sample_rate(&self) -> u32 {
        self.sample_rate
    }

    /// The WAV file's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// MCP audio content: base64 data and MIME type `audio/wav`.
    pub fn into_content(self) -> ContentBlock {
        let data = base64::engine::general_purpose::STANDARD.encode(&self.bytes);
        ContentBlock::audio(data, WAV_MIME_TYPE)
    }
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// The frames and sample rate of a well-formed PCM WAV file.
fn check_wav(b: &[u8]) -> Result<(u64, u32), AudioError> {
    if b.len() < 12 || &b[0..4] != b"RIFF" || &b[8..12] != b"WAVE" {
        return Err(AudioError::NotWav);
    }
    let malformed = AudioError::Malformed;
    let riff = u32_at(b, 4).ok_or(malformed)? as usize;
    if riff.checked_add(8) != Some(b.len()) {
        return Err(malformed);
    }
    let mut at = 12;
    let mut format: Option<(u16, u32, u16)> = None;
    let mut data: Option<usize> = None;
    while at < b.len() {
        let id = b.get(at..at + 4).ok_or(malformed)?;
        let size = u32_at(b, at + 4).ok_or(malformed)? as usize;
        let body = at + 8;
        let end = body.checked_add(size).ok_or(malformed)?;
        // Chunks are padded to an even length.
        let next = end.checked_add(size % 2).ok_or(malformed)?;
        if next > b.len() {
            return Err(malformed);
        }
        match id {
            b"fmt " => {
                if format.is_some() || data.is_some() || size < 16 {
                    return Err(malformed);
                }
                let tag = u16_at(b, body).ok_or(malformed)?;
                let channels = u16_at(b, body + 2).ok_or(malformed)?;
                let rate = u32_at(b, body + 4).ok_or(malformed)?;
                let byte_rate = u32_at(b, body + 8).ok_or(malformed)?;
                let align = u16_at(b, body + 12).ok_or(malformed)?;
                let bits = u16_at(b, body + 14).ok_or(malformed)?;
                let pcm = tag == 1 && matches!(bits, 8 | 16 | 24 | 32);
                let sane = (1..=MAX_CHANNELS).contains(&channels)
                    && (1..=MAX_SAMPLE_RATE).contains(&rate)
                    && u32::from(align) == u32::from(channels) * u32::from(bits / 8)
                    && u64::from(byte_rate) == u64::from(rate) * u64::from(align);
                if !pcm || !sane {
                    return Err(malformed);
                }
                format = Some((channels, rate, align));
            }
            b"data" => {
                if format.is_none() || data.is_some() {
                    return Err(malformed);
                }
                data = Some(size);
            }
            _ => {}
        }
        at = next;
    }
    match (format, data) {
        (Some((_, rate, align)), Some(size)) if size % usize::from(align) == 0 => {
            Ok(((size / usize::from(align)) as u64, rate))
        }
        _ => Err(malformed),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A WAV file of `frames` silent frames, mono, 16-bit, 8 kHz.
    fn wav(frames: u32) -> Vec<u8> {
        let data = frames * 2;
        let mut b = Vec::new();
        b.extend_from_slice(b"RIFF");
        b.extend_from_slice(&(36 + data).to_le_bytes());
        b.extend_from_slice(b"WAVEfmt ");
        b.extend_from_slice(&16u32.to_le_bytes());
        b.extend_from_slice(&1u16.to_le_bytes()); // PCM
        b.extend_from_slice(&1u16.to_le_bytes()); // mono
        b.extend_from_slice(&8000u32.to_le_bytes());
        b.extend_from_slice(&16000u32.to_le_bytes());
        b.extend_from_slice(&2u16.to_le_bytes());
        b.extend_from_slice(&16u16.to_le_bytes());
        b.extend_from_slice(b"data");
        b.extend_from_slice(&data.to_le_bytes());
        b.resize(b.len() + data as usize, 0);
        b
    }

    #[test]
    fn a_pcm_wav_is_accepted() {
        let a = Audio::wav(wav(4)).unwrap();
        assert_eq!((a.frames(), a.sample_rate()), (4, 8000));
        let json = serde_json::to_value(a.into_content()).unwrap();
        assert_eq!(json["type"], "audio");
        assert_eq!(json["mimeType"], "audio/wav");
    }

    #[test]
    fn broken_or_foreign_files_are_refused() {
        let good = wav(4);
        let mut truncated = good.clone();
        truncated.pop();
        let mut trailing = good.clone();
        trailing.push(0);
        let mut float = good.clone();
        float[20] = 3; // IEEE float, not integer PCM
        let mut lying = good.clone();
        lying[40] = 200; // a data chunk longer than the file
        let mut odd_frames = good.clone();
        odd_frames[40] = 7;
        odd_frames[4] = 43;
        odd_frames.truncate(51);
        // The conformance suite's own sample declares data it lacks.
        let short = {
            let mut s = wav(0);
            s[40] = 2;
            s
        };
        for (name, bytes, want) in [
            ("empty", Vec::new(), AudioError::NotWav),
            ("ogg", b"OggS\0\0\0\0\0\0\0\0".to_vec(), AudioError::NotWav),
            ("truncated", truncated, AudioError::Malformed),
            ("trailing", trailing, AudioError::Malformed),
            ("float", float, AudioError::Malformed),
            ("lying", lying, AudioError::Malformed),
            ("odd frames", odd_frames, AudioError::Malformed),
            ("short", short, AudioError::Malformed),
            ("huge", vec![0; MAX_AUDIO_BYTES + 1], AudioError::TooLarge),
        ] {
            assert_eq!(Audio::wav(bytes).unwrap_err(), want, "{name}");
        }
    }
}
