"""Photos as phones and cameras make them: HEIC and AVIF, metadata, 16-bit colour, animations, alpha."""

import io

import numpy as np
import pytest
from PIL import Image, ImageCms

from deblur.errors import SettingError
from deblur.imageio import (
    OUTPUTS_MARK,
    OUTPUTS_NOTE,
    AnimationError,
    ImageReadError,
    ImageTooLargeError,
    NotAnImageError,
    Photo,
    TruncatedImageError,
    WriteOptions,
    decode_photo,
    encode_photo,
    find_images,
    format_for,
    mark_outputs,
    outputs_only,
    peek_photo,
    read_photo,
    write_photo,
)


def photo_pixels(height=48, width=64):
    ramp = np.add.outer(np.arange(height) * 3, np.arange(width) * 2)
    return np.stack([ramp % 256, (ramp * 2) % 256, 255 - ramp % 256], axis=-1).astype(np.uint8)


def exif_and_icc():
    exif = Image.Exif()
    exif[0x010F] = "PhoneMaker"  # Make
    exif[0x0132] = "2026:11:27 10:11:12"  # DateTime
    exif[0x8825] = {1: "N", 2: (52.0, 31.0, 12.0)}  # GPS
    return exif, wide_rgb_profile()


def wide_rgb_profile(space: bytes = b"RGB ") -> bytes:
    """An ICC profile of RGB pixels that is not sRGB (its red primary moved, as Adobe RGB's or Display P3's is): it
    must be carried as it is. `space` puts another colour space in its header (bytes 16 to 20)."""
    profile = bytearray(ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes())
    tag = profile.index(b"rXYZ")
    red = int.from_bytes(profile[tag + 4 : tag + 8], "big") + 8  # the tag's data, after its type and reserved bytes
    profile[red : red + 4] = (int.from_bytes(profile[red : red + 4], "big") + 2000).to_bytes(4, "big")
    profile[16:20] = space
    return bytes(profile)


def test_a_pixel_limit_or_path_that_is_none_is_named(tmp_path):
    path = tmp_path / "a.png"
    Image.new("RGB", (8, 6)).save(path)
    # NaN had let any size through, -1 refused every photo as too large
    for limit in (float("nan"), -1, "100"):
        with pytest.raises(SettingError, match="max_pixels must be a whole number of pixels, at least 1"):
            read_photo(path, max_pixels=limit)
        with pytest.raises(SettingError, match="max_pixels must be a whole number of pixels, at least 1"):
            peek_photo(path, "a.png", max_pixels=limit)
    with pytest.raises(SettingError, match="the photo is int: give its path"):
        read_photo(5)  # had been Path's TypeError
    assert read_photo(str(path), max_pixels=48).rgb.shape == (6, 8, 3)


def test_heic_and_avif_from_phones_are_read_as_photos(tmp_path):
    from pillow_heif import register_heif_opener

    register_heif_opener()
    pixels = photo_pixels()
    Image.fromarray(pixels).save(tmp_path / "phone.heic", quality=95)
    Image.fromarray(pixels).save(tmp_path / "phone.avif", quality=95)
    for name in ("phone.heic", "phone.avif"):
        photo = read_photo(tmp_path / name)
        assert photo.rgb.shape == (48, 64, 3)
        assert np.abs(photo.rgb * 255 - pixels).mean() < 6  # lossy, but the same picture


def test_jpegs_and_camera_heifs_under_their_other_names_are_found_in_a_folder(tmp_path):
    # .jfif and .jpe: JPEGs as Windows browsers saved them; .HIF: a Canon, Fujifilm or Sony camera's HEIF
    from pillow_heif import register_heif_opener

    register_heif_opener()
    pixels = photo_pixels()
    Image.fromarray(pixels).save(tmp_path / "saved.jfif", "JPEG", quality=95)
    Image.fromarray(pixels).save(tmp_path / "old.JPE", "JPEG", quality=95)
    Image.fromarray(pixels).save(tmp_path / "DSCF0001.HIF", "HEIF", quality=95)
    found = sorted(name.name for _, name in find_images([tmp_path]))
    assert found == ["DSCF0001.HIF", "old.JPE", "saved.jfif"]
    for name in found:
        assert np.abs(read_photo(tmp_path / name).rgb * 255 - pixels).mean() < 6


def test_a_linked_folder_is_searched_once_and_a_link_back_up_or_to_the_outputs_is_not_followed(tmp_path):
    photos, albums, out = tmp_path / "photos", tmp_path / "albums" / "2026", tmp_path / "out"
    for folder in (photos, albums, out):
        folder.mkdir(parents=True)
    for path in (photos / "a.png", albums / "b.png", out / "a.png", tmp_path / "beside.png"):
        Image.fromarray(photo_pixels()).save(path)
    (photos / "album").symlink_to(albums)  # passed by without a word, where a file manager shows it as a folder
    (photos / "again").symlink_to(albums)
    (photos / "up").symlink_to(photos)  # a loop
    (photos / "parent").symlink_to(tmp_path)  # a way up, to everything beside the photos
    (photos / "results").symlink_to(out)
    found = [name.as_posix() for _, name in find_images([photos], skip=out)]
    assert found == ["a.png", "again/b.png"]  # the first link by name


def test_a_folder_marked_as_outputs_is_left_out_below_the_folder_given_and_named_when_asked(tmp_path):
    photos = tmp_path / "photos"
    (photos / "old" / "inner").mkdir(parents=True)
    for path in (photos / "a.png", photos / "old" / "b.png", photos / "old" / "inner" / "c.png"):
        Image.fromarray(photo_pixels()).save(path)
    (photos / "old" / OUTPUTS_MARK).write_text("")
    assert [name.as_posix() for _, name in find_images([photos])] == ["a.png", "old/b.png", "old/inner/c.png"]
    left, named = [], []
    assert [name.as_posix() for _, name in find_images([photos], outputs=left)] == ["a.png"]
    assert left == [photos / "old"]
    given = [name.as_posix() for _, name in find_images([photos / "old"], outputs=named)]
    assert given == ["b.png", "inner/c.png"] and named == []  # the marked folder itself, given by name
    assert not outputs_only(photos) and outputs_only(photos / "old") and outputs_only(tmp_path / "new")
    mark_outputs(tmp_path / "new")
    assert (tmp_path / "new" / OUTPUTS_MARK).read_text() == OUTPUTS_NOTE


@pytest.mark.parametrize("fmt", ["jpg", "png", "webp", "tiff"])
def test_exif_and_icc_survive_a_round_trip_and_can_be_stripped(tmp_path, fmt):
    exif, icc = exif_and_icc()
    exif[0x0112] = 6  # turned: the pixels are turned upright on reading, so the output says upright
    Image.fromarray(photo_pixels()).save(tmp_path / "meta.jpg", exif=exif, icc_profile=icc, quality=95)
    photo = read_photo(tmp_path / "meta.jpg")
    write_photo(tmp_path / f"out.{fmt}", photo.rgb, photo, WriteOptions(fmt))
    with Image.open(tmp_path / f"out.{fmt}") as out:
        kept = out.getexif()
        assert out.size == (48, 64)  # turned
        assert kept[0x010F] == "PhoneMaker" and kept[0x0132] == "2026:11:27 10:11:12"
        assert kept.get_ifd(0x8825)[1] == "N"
        assert kept.get(0x0112, 1) == 1
        assert out.info.get("icc_profile") == icc
    write_photo(tmp_path / f"bare.{fmt}", photo.rgb, photo, WriteOptions(fmt, strip_metadata=True))
    with Image.open(tmp_path / f"bare.{fmt}") as out:
        assert 0x010F not in out.getexif() and not out.info.get("icc_profile")


def test_a_profile_that_does_not_describe_the_pixels_written_is_left_out(tmp_path):
    pixels = photo_pixels()
    Image.fromarray(pixels).convert("CMYK").save(tmp_path / "print.jpg", icc_profile=wide_rgb_profile(b"CMYK"))
    assert read_photo(tmp_path / "print.jpg").icc is None  # written as RGB it had kept its CMYK profile: invalid
    gray = wide_rgb_profile(b"GRAY")  # once: a profile made a second later has another date in its header
    Image.fromarray(pixels[:, :, 0]).save(tmp_path / "gray.png", icc_profile=gray)
    assert read_photo(tmp_path / "gray.png").icc == gray  # grayscale is written grayscale


def test_jpeg_and_webp_quality_is_the_users_choice():
    photo = decode_photo(io.BytesIO(_png(photo_pixels(96, 96))), "x.png")
    noisy = photo.rgb + np.random.default_rng(0).normal(0, 0.05, photo.rgb.shape).astype(np.float32)
    for fmt in ("jpg", "webp"):
        small = encode_photo(noisy, photo, WriteOptions(fmt, quality=40))
        large = encode_photo(noisy, photo, WriteOptions(fmt, quality=98))
        assert len(small) < len(large) / 2
        assert encode_photo(noisy, photo, WriteOptions(fmt)) == encode_photo(noisy, photo, WriteOptions(fmt, 95))
    for fmt in ("png", "bmp", "tiff"):  # given where it means nothing, it is refused: it had gone unused
        with pytest.raises(SettingError, match=f"quality is for jpg and webp, and {fmt} is written without loss"):
            WriteOptions(fmt, quality=80)


def test_sixteen_bit_colour_stays_sixteen_bit_in_png_and_tiff(tmp_path):
    import av
    import tifffile

    deep = (np.random.default_rng(0).random((20, 30, 3)) * 65535).astype(np.uint16)
    tifffile.imwrite(tmp_path / "deep.tif", deep, photometric="rgb")
    _, icc = exif_and_icc()
    photo = read_photo(tmp_path / "deep.tif")
    assert photo.sixteen_bit and not photo.grayscale
    np.testing.assert_allclose(photo.rgb * 65535, deep, atol=0.5)
    photo.icc = icc
    write_photo(tmp_path / "out.png", photo.rgb, photo, WriteOptions("png"))
    with av.open(str(tmp_path / "out.png")) as container:
        frame = next(container.decode(video=0))
        np.testing.assert_array_equal(frame.to_ndarray(format="rgb48le"), deep)
    assert Image.open(tmp_path / "out.png").info.get("icc_profile") == icc  # Pillow reads the chunk we wrote
    again = read_photo(tmp_path / "out.png")  # and our reader reads it back at 16 bits
    np.testing.assert_allclose(again.rgb * 65535, deep, atol=0.5)
    write_photo(tmp_path / "out.tif", photo.rgb, photo, WriteOptions("tiff"))
    np.testing.assert_array_equal(tifffile.imread(tmp_path / "out.tif"), deep)
    write_photo(tmp_path / "out.jpg", photo.rgb, photo, WriteOptions("jpg"))  # JPEG has 8 bits: no error
    assert Image.open(tmp_path / "out.jpg").mode == "RGB"


@pytest.mark.parametrize("fmt", ["png", "tiff"])
def test_sixteen_bit_colour_is_read_from_a_stream_as_from_a_file(tmp_path, fmt):
    # as the server and the Ray engine's workers read a photo: had failed on a path's read_bytes
    deep = (np.random.default_rng(0).random((20, 30, 3)) * 65535).astype(np.uint16)
    like = Photo(deep / 65535.0, None, False, True)
    write_photo(tmp_path / f"deep.{fmt}", like.rgb, like, WriteOptions(fmt))
    with open(tmp_path / f"deep.{fmt}", "rb") as file:
        stream = io.BytesIO(file.read())
    photo = decode_photo(stream, f"deep.{fmt}")
    assert photo.sixteen_bit
    np.testing.assert_allclose(photo.rgb * 65535, deep, atol=0.5)


def test_a_sixteen_bit_tiff_stored_a_plane_per_channel_is_read_as_its_pixels(tmp_path):
    import tifffile

    deep = (np.random.default_rng(0).random((20, 30, 3)) * 65535).astype(np.uint16)
    tifffile.imwrite(tmp_path / "planes.tif", deep.transpose(2, 0, 1), photometric="rgb", planarconfig="separate")
    photo = read_photo(tmp_path / "planes.tif")  # it had been read as an image 3 pixels high
    np.testing.assert_allclose(photo.rgb * 65535, deep, atol=0.5)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_float_tiffs_as_raw_developers_export_them_are_read_with_1_as_white_and_written_at_16_bits(tmp_path, dtype):
    import av
    import tifffile

    rng = np.random.default_rng(0)
    rgb = rng.random((20, 30, 3)).astype(dtype)
    _, icc = exif_and_icc()
    # darktable's float export: RGB, 1.0 white; turned by its orientation tag (6: 90 degrees clockwise to view)
    tifffile.imwrite(tmp_path / "dev.tif", rgb, photometric="rgb", extratags=[(274, "H", 1, 6, True)])
    tifffile.imwrite(tmp_path / "icc.tif", rgb, photometric="rgb", extratags=[(34675, "B", len(icc), icc, True)])
    photo = read_photo(tmp_path / "dev.tif")  # Pillow cannot open it: "not a readable image"
    assert photo.sixteen_bit and not photo.grayscale and photo.alpha is None
    np.testing.assert_allclose(photo.rgb, np.rot90(rgb.astype(np.float32), -1), atol=1e-6)
    assert read_photo(tmp_path / "icc.tif").icc == icc
    with open(tmp_path / "icc.tif", "rb") as stream:  # as the server reads an upload
        np.testing.assert_allclose(decode_photo(stream, "icc.tif").rgb, rgb.astype(np.float32), atol=1e-6)
    write_photo(tmp_path / "out.png", photo.rgb, photo, WriteOptions("png"))
    with av.open(str(tmp_path / "out.png")) as container:
        written = next(container.decode(video=0)).to_ndarray(format="rgb48le")
    np.testing.assert_allclose(written / 65535, photo.rgb, atol=0.5 / 65535)

    rgba = np.dstack([rgb, rng.random((20, 30, 1)).astype(dtype)])
    tifffile.imwrite(tmp_path / "rgba.tif", rgba, photometric="rgb", extrasamples=[2])
    photo = read_photo(tmp_path / "rgba.tif")
    np.testing.assert_allclose(photo.alpha, rgba[:, :, 3].astype(np.float32), atol=1e-6)
    tifffile.imwrite(tmp_path / "gray.tif", rgb[:, :, 0])
    photo = read_photo(tmp_path / "gray.tif")
    assert photo.grayscale and photo.sixteen_bit
    np.testing.assert_allclose(photo.rgb[:, :, 2], rgb[:, :, 0].astype(np.float32), atol=1e-6)
    tifffile.imwrite(tmp_path / "planes.tif", rgb.transpose(2, 0, 1), photometric="rgb", planarconfig="separate")
    np.testing.assert_allclose(read_photo(tmp_path / "planes.tif").rgb, rgb.astype(np.float32), atol=1e-6)

    tifffile.imwrite(tmp_path / "hdr.tif", rgb * 4, photometric="rgb")
    with pytest.raises(ImageReadError, match=rf"hdr.tif: a {rgb.itemsize * 8}-bit float colour image with values "):
        read_photo(tmp_path / "hdr.tif")
    tifffile.imwrite(tmp_path / "pages.tif", np.stack([rgb, rgb]), photometric="rgb")
    with pytest.raises(AnimationError, match=r"pages.tif: a TIFF of 2 pages"):
        read_photo(tmp_path / "pages.tif")
    with pytest.raises(ImageTooLargeError, match=r"dev.tif: 30x20 = 600 pixels, over the limit of 500"):
        read_photo(tmp_path / "dev.tif", max_pixels=500)


@pytest.mark.parametrize("fmt", ["png", "tiff"])
def test_a_sixteen_bit_gray_photos_transparency_is_kept_at_16_bits(tmp_path, fmt):
    # a float gray + alpha TIFF (a RAW developer's export): Pillow holds no 16-bit gray with alpha, and the alpha
    # had been left out; it is written as 16-bit RGBA, its three channels equal
    import tifffile

    rng = np.random.default_rng(0)
    gray_alpha = rng.random((20, 30, 2)).astype(np.float32)
    tifffile.imwrite(tmp_path / "ga.tif", gray_alpha, photometric="minisblack", extrasamples=[2])
    photo = read_photo(tmp_path / "ga.tif")
    assert photo.grayscale and photo.sixteen_bit and photo.alpha is not None
    write_photo(tmp_path / f"out.{fmt}", photo.rgb, photo, WriteOptions(fmt))
    again = read_photo(tmp_path / f"out.{fmt}")
    assert again.sixteen_bit and again.alpha is not None
    np.testing.assert_allclose(again.alpha, gray_alpha[:, :, 1], atol=1 / 65535)
    np.testing.assert_allclose(again.rgb, np.repeat(gray_alpha[:, :, :1], 3, axis=-1), atol=1 / 65535)


def test_a_sixteen_bit_gray_and_alpha_png_is_read_at_16_bits_as_gray(tmp_path):
    # Pillow opens it as 8-bit RGBA: it had come out 8-bit colour
    import struct
    import zlib

    gray_alpha = (np.random.default_rng(0).random((20, 30, 2)) * 65535).astype(np.uint16)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + row.astype(">u2").tobytes() for row in gray_alpha)  # filter 0: the row as it is
    header = struct.pack(">IIBBBBB", 30, 20, 16, 4, 0, 0, 0)  # 16 bits, colour type 4: gray and alpha
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")
    (tmp_path / "ga.png").write_bytes(png)
    photo = read_photo(tmp_path / "ga.png")
    assert photo.grayscale and photo.sixteen_bit
    np.testing.assert_allclose(photo.rgb * 65535, np.repeat(gray_alpha[:, :, :1], 3, axis=-1), atol=0.5)
    np.testing.assert_allclose(photo.alpha * 65535, gray_alpha[:, :, 1], atol=0.5)
    write_photo(tmp_path / "out.png", photo.rgb, photo, WriteOptions("png"))
    again = read_photo(tmp_path / "out.png")
    assert again.sixteen_bit and np.abs(again.alpha - photo.alpha).max() < 1 / 65535


@pytest.mark.parametrize("planes", ["contig", "separate"])
def test_a_sixteen_bit_gray_and_alpha_tiff_is_read_at_16_bits_as_gray(tmp_path, planes):
    # Pillow cannot open it: "not a readable image (not in a format Pillow reads)"
    import tifffile

    gray_alpha = (np.random.default_rng(0).random((20, 30, 2)) * 65535).astype(np.uint16)
    stored = gray_alpha if planes == "contig" else gray_alpha.transpose(2, 0, 1)
    tifffile.imwrite(tmp_path / "ga.tif", stored, photometric="minisblack", extrasamples=[2], planarconfig=planes)
    photo = read_photo(tmp_path / "ga.tif")
    assert photo.grayscale and photo.sixteen_bit
    np.testing.assert_allclose(photo.rgb * 65535, np.repeat(gray_alpha[:, :, :1], 3, axis=-1), atol=0.5)
    np.testing.assert_allclose(photo.alpha * 65535, gray_alpha[:, :, 1], atol=0.5)
    assert peek_photo(tmp_path / "ga.tif", "ga.tif") == (30, 20)
    write_photo(tmp_path / "out.tiff", photo.rgb, photo, WriteOptions("tiff"))
    again = read_photo(tmp_path / "out.tiff")
    assert again.sixteen_bit and np.abs(again.alpha - photo.alpha).max() < 1 / 65535


def test_an_animation_is_refused_by_name(tmp_path):
    frames = [Image.fromarray(np.roll(photo_pixels(), shift, axis=1)).convert("P") for shift in (0, 5, 10)]
    frames[0].save(tmp_path / "moving.gif", save_all=True, append_images=frames[1:])
    with pytest.raises(AnimationError, match=r"moving.gif: an animation of 3 frames; .* ffmpeg -i"):
        read_photo(tmp_path / "moving.gif")
    Image.fromarray(photo_pixels()).convert("P").save(tmp_path / "still.gif")
    assert read_photo(tmp_path / "still.gif").rgb.shape == (48, 64, 3)


def test_an_empty_file_is_called_empty_and_other_bytes_not_an_image(tmp_path):
    (tmp_path / "empty.jpg").write_bytes(b"")
    with pytest.raises(NotAnImageError, match=r"empty.jpg: an empty file \(0 bytes\), not an image$"):
        read_photo(tmp_path / "empty.jpg")
    with pytest.raises(NotAnImageError, match=r"upload.png: an empty file"):
        decode_photo(io.BytesIO(b""), "upload.png")
    (tmp_path / "text.jpg").write_bytes(b"hello")
    with pytest.raises(NotAnImageError, match=r"text.jpg: not a readable image \(not in a format Pillow reads\)"):
        read_photo(tmp_path / "text.jpg")


def test_a_tiff_of_several_pages_is_refused_by_name_and_one_page_is_read(tmp_path):
    pages = [Image.fromarray(np.roll(photo_pixels(), shift, axis=1)) for shift in (0, 5)]
    pages[0].save(tmp_path / "scan.tif", save_all=True, append_images=pages[1:])
    with pytest.raises(AnimationError, match=r"scan.tif: a TIFF of 2 pages; .* tiffsplit"):
        read_photo(tmp_path / "scan.tif")
    pages[0].save(tmp_path / "page.tif")
    assert read_photo(tmp_path / "page.tif").rgb.shape == (48, 64, 3)


def test_32_bit_grayscale_is_read_on_its_scale_and_out_of_range_values_are_refused(tmp_path):
    ramp = photo_pixels()[:, :, 0].astype(np.float32) / 255.0
    Image.fromarray(ramp, mode="F").save(tmp_path / "float.tif")
    photo = read_photo(tmp_path / "float.tif")  # a float TIFF's white is 1.0: it had come out nearly black
    assert photo.grayscale and photo.sixteen_bit
    np.testing.assert_allclose(photo.rgb[:, :, 1], ramp, atol=1e-6)
    Image.fromarray(ramp * 300.0, mode="F").save(tmp_path / "hdr.tif")
    with pytest.raises(ImageReadError, match=r"hdr.tif: a 32-bit float grayscale image with values from 0 to 300; "):
        read_photo(tmp_path / "hdr.tif")
    Image.fromarray((ramp * 2**20).astype(np.int32), mode="I").save(tmp_path / "wide.tif")
    with pytest.raises(ImageReadError, match=r"wide.tif: a 32-bit integer grayscale image .* 0 \(black\) to 65535"):
        read_photo(tmp_path / "wide.tif")
    Image.fromarray((ramp * 65535).astype(np.int32), mode="I").save(tmp_path / "sixteen.tif")
    np.testing.assert_allclose(read_photo(tmp_path / "sixteen.tif").rgb[:, :, 0], ramp, atol=1e-4)


@pytest.mark.parametrize("progressive", [False, True])
def test_a_jpeg_far_shorter_than_its_pixels_is_refused_and_a_flat_one_is_not(tmp_path, progressive):
    """libjpeg fills a cut file with grey: a 3 kB file declaring 2400x2400 would be deblurred at full size. The
    flattest real JPEG of that size (black, optimized tables) is three times the bound. (At 7000x7000, as first
    written, the same test took 13 s of the suite, decoding the flat one.)"""
    buffer = io.BytesIO()
    Image.new("RGB", (2400, 2400)).save(buffer, "JPEG", optimize=True, progressive=progressive)
    flat = buffer.getvalue()
    (tmp_path / "flat.jpg").write_bytes(flat)
    (tmp_path / "cut.jpg").write_bytes(flat[:3000] + b"\xff\xd9")
    assert decode_photo(io.BytesIO(flat), "flat.jpg").rgb.shape == (2400, 2400, 3)
    with pytest.raises(TruncatedImageError, match=r"cut.jpg: truncated: a 2400x2400 JPEG needs at least 11,250 bytes"):
        read_photo(tmp_path / "cut.jpg")


def test_alpha_is_flattened_onto_white_where_the_format_has_none(tmp_path):
    rgba = np.zeros((20, 20, 4), np.uint8)
    rgba[..., 0] = 255  # red everywhere, hidden where transparent
    rgba[:10, :, 3] = 255
    Image.fromarray(rgba).save(tmp_path / "logo.png")
    photo = read_photo(tmp_path / "logo.png")
    write_photo(tmp_path / "out.jpg", photo.rgb, photo, WriteOptions("jpg", quality=100))
    out = np.asarray(Image.open(tmp_path / "out.jpg")).astype(int)
    assert np.abs(out[2, 2] - [255, 0, 0]).max() < 8  # opaque: red
    assert np.abs(out[17, 17] - [255, 255, 255]).max() < 8  # transparent: white, not the hidden red


def test_a_sixteen_bit_photos_transparency_is_kept_in_webp(tmp_path):
    # webp holds alpha at 8 bits: it had been left out, and the colours under transparent pixels shown
    rgb = np.zeros((20, 20, 3), np.float32)
    rgb[..., 0] = 1.0  # red everywhere, hidden where transparent
    alpha = np.zeros((20, 20), np.float32)
    alpha[:10] = 1.0
    photo = Photo(rgb, alpha, False, True)
    write_photo(tmp_path / "out.webp", photo.rgb, photo, WriteOptions("webp", quality=100))
    out = np.asarray(Image.open(tmp_path / "out.webp"))
    assert out.shape == (20, 20, 4)
    assert out[2, 2, 3] == 255 and out[17, 17, 3] == 0


def _png(pixels: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG")
    return buffer.getvalue()


def test_without_pillow_heif_other_photos_read_and_a_heic_names_what_it_needs(tmp_path, monkeypatch):
    import deblur.imageio as imageio

    monkeypatch.setattr(imageio, "_register_plugins", lambda: False)  # as on a machine without pillow-heif
    Image.fromarray(photo_pixels()).save(tmp_path / "camera.jpg", quality=95)
    assert read_photo(tmp_path / "camera.jpg").rgb.shape == (48, 64, 3)
    (tmp_path / "phone.heic").write_bytes(b"\x00\x00\x00\x18ftypheic" + bytes(64))
    with pytest.raises(imageio.ImageReadError, match="phone.heic: HEIC and HEIF photos need pillow-heif"):
        read_photo(tmp_path / "phone.heic")


def test_a_pattern_the_shell_left_is_expanded_in_name_order_and_other_inputs_kept(tmp_path, monkeypatch):
    from deblur.imageio import expand_patterns

    monkeypatch.chdir(tmp_path)
    for name in ("b.jpg", "a.jpg", "c.png", "photo [1].jpg", "odd*.jpg"):
        (tmp_path / name).write_bytes(b"")
    given = ["*.jpg", "c.png", "?.png", "none*.webp", "s3://bucket/*.jpg", "photo [1].jpg", "odd*.jpg"]
    # Windows' shells pass `photos\*.jpg` on as it is: it had been "no such file or folder"
    assert expand_patterns(given) == [
        "a.jpg", "b.jpg", "odd*.jpg", "photo [1].jpg",  # `[` is itself; a file named with `*` matches too
        "c.png", "c.png",
        "none*.webp",  # matching nothing: kept, for predict to name as missing
        "s3://bucket/*.jpg",
        "photo [1].jpg",
        "odd*.jpg",  # a file of that very name is itself
    ]  # fmt: skip


def test_the_format_written_is_the_one_asked_for_else_the_names_else_png():
    named = {"a.jpg": "jpg", "a.JPEG": "jpg", "a.jfif": "jpg", "a.tif": "tiff", "a.webp": "webp", "a": "png"}
    assert {name: format_for(name) for name in named} == named
    assert format_for("a.out", "bmp") == "bmp" and format_for("a.png", "png") == "png"
    with pytest.raises(SettingError, match=r"a.png: its name says png, and the format asked for is jpg: give the file"):
        format_for("a.png", "jpg")
    with pytest.raises(SettingError, match=r"a.avif: deblur reads .avif photos and writes png, jpg, webp, bmp, tiff"):
        format_for("a.avif")
    with pytest.raises(SettingError, match=r"format must be one of png, jpg, webp, bmp, tiff; got 'gif'"):
        format_for("a", "gif")
    with pytest.raises(SettingError, match=r"format must be one of png, jpg, webp, bmp, tiff; got \['png'\]"):
        format_for("a", ["png"])  # had been "unhashable type: 'list'"


def test_a_quality_that_is_no_whole_number_from_1_to_100_is_named():
    from deblur.errors import SettingError

    for quality, said in [(0, "got 0"), ("80", "got '80'"), (80.5, "got 80.5")]:  # "80" had been a TypeError
        with pytest.raises(SettingError, match=f"quality must be a whole number from 1 to 100; {said}"):
            WriteOptions("jpg", quality)
    assert WriteOptions("jpg", np.int64(80)).quality == 80
