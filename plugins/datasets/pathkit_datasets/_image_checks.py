"""What a patch dataset checks of an image before it may reach an encoder: its size in bytes and
pixels, and that its header (and, for PNG, every chunk's checksum) reads, without decoding the
pixels (docs/hepatobench.md, "Data").
"""

from __future__ import annotations

# Limits checked before an image is read or decoded. A patch is a few hundred pixels a side; a
# member that declares more bytes or pixels than these is a decompression bomb or not a patch.
MAX_IMAGE_BYTES = 256 * 1024 * 1024
MAX_IMAGE_PIXELS = 64 * 1024 * 1024  # 8192 x 8192


def image_size_problem(n_bytes: int) -> str | None:
    """Why an image of `n_bytes` (a zip member's declared size, a file's size) is not read."""
    if n_bytes > MAX_IMAGE_BYTES:
        return (f"{n_bytes} bytes, more than the {MAX_IMAGE_BYTES} an image may have "
                "(a decompression bomb, or not a patch)")
    return None


def probe_image(data: bytes) -> tuple[tuple[int, int] | None, str | None]:
    """((width, height), None) when `data` holds a readable image, else (None, why): what a dataset
    checks before an image may reach an encoder (header and, for PNG, every chunk's checksum),
    without decoding the pixels. The size in the header is checked against `MAX_IMAGE_PIXELS`
    before anything else is read."""
    import io
    import warnings

    from PIL import Image, UnidentifiedImageError

    if not data:
        return None, "empty file (0 bytes)"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # the limit below decides
            with Image.open(io.BytesIO(data)) as img:
                size = img.size
                if size[0] * size[1] > MAX_IMAGE_PIXELS:
                    return None, (f"{size[0]} x {size[1]} pixels, more than the {MAX_IMAGE_PIXELS} an image may "
                                  "have (a decompression bomb, or not a patch)")
                img.verify()
    except Image.DecompressionBombError as exc:
        return None, f"too many pixels ({exc})"
    except (OSError, SyntaxError, ValueError, UnidentifiedImageError) as exc:
        return None, f"not a readable image ({type(exc).__name__}: {exc})"
    return (int(size[0]), int(size[1])), None
