"""Write an RGB pyramid in each format a slide reader reads, with the format's own writer:
tifffile (OME-TIFF, SubIFD levels), zarr (OME-Zarr, NGFF 0.4 and 0.5), pylibCZIrw (CZI) and wsidicomizer (DICOM,
from a slide file). Shared by the reader tests (tests/readers/test_slide_readers*.py) and `bench_readers.py`."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def pyramid(level0: np.ndarray, n_levels: int) -> list[np.ndarray]:
    """`level0` and n_levels - 1 levels, each the 2x2 mean of the one before (floor sizes)."""
    out = [level0]
    for _ in range(n_levels - 1):
        prev = out[-1]
        h, w = prev.shape[0] // 2 * 2, prev.shape[1] // 2 * 2
        blocks = prev[:h, :w].reshape(h // 2, 2, w // 2, 2, 3).astype(np.uint16)
        out.append((blocks.sum(axis=(1, 3)) // 4).astype(np.uint8))
    return out


def write_ome_tiff(path: Path, levels: list[np.ndarray], mpp: float | None, *, compression: str | None = None,
                   quality: int | None = None, label: np.ndarray | None = None, unit: str = "µm") -> Path:
    """An OME-TIFF: level 0 and its SubIFD levels, PhysicalSizeX/Y in `unit`, a `label` image series;
    `quality` is the JPEG quality when `compression` is "jpeg"."""
    import tifffile

    factor = {"µm": 1.0, "nm": 1e3, "mm": 1e-3}[unit]
    meta = {"axes": "YXS"}
    if mpp is not None:
        meta.update(PhysicalSizeX=mpp * factor, PhysicalSizeXUnit=unit, PhysicalSizeY=mpp * factor,
                    PhysicalSizeYUnit=unit)
    opts = {"tile": (256, 256), "photometric": "rgb", "compression": compression,
            **({"compressionargs": {"level": quality}} if quality is not None else {})}
    with tifffile.TiffWriter(path, ome=True) as tif:
        tif.write(levels[0], subifds=len(levels) - 1, metadata=meta, **opts)
        for level in levels[1:]:
            tif.write(level, subfiletype=1, **opts)
        if label is not None:
            tif.write(label, photometric="rgb", metadata={"Name": "label", "axes": "YXS"})
    return path


def write_ome_zarr(path: Path, levels: list[np.ndarray], mpp: float | None, *, version: str = "0.5",
                   zip_store: bool = False) -> Path:
    """An OME-Zarr of the levels through zarr: NGFF 0.5 (zarr v3, metadata under "ome") or 0.4 (zarr
    v2), axes c, y, x in micrometres, one `scale` transformation per level; a zip store when asked."""
    import zarr

    unit = {"unit": "micrometer"} if mpp is not None else {}
    axes = [{"name": "c", "type": "channel"}, {"name": "y", "type": "space", **unit},
            {"name": "x", "type": "space", **unit}]
    datasets = [{"path": str(i), "coordinateTransformations": [
        {"type": "scale", "scale": [1.0, (mpp or 1.0) * 2**i, (mpp or 1.0) * 2**i]}]} for i in range(len(levels))]
    multiscale = {"name": path.name, "axes": axes, "datasets": datasets}
    attrs = ({"ome": {"version": "0.5", "multiscales": [multiscale]}} if version == "0.5"
             else {"multiscales": [{"version": "0.4", **multiscale}]})
    store = zarr.storage.ZipStore(str(path), mode="w") if zip_store else str(path)
    group = zarr.open_group(store, mode="w", zarr_format=3 if version == "0.5" else 2, attributes=attrs)
    for i, level in enumerate(levels):
        data = np.ascontiguousarray(np.moveaxis(level, 2, 0))
        group.create_array(str(i), data=data, chunks=(3, 256, 256))
    if zip_store:
        store.close()
    return path


def write_czi(path: Path, level0: np.ndarray, mpp: float | None) -> Path:
    """A CZI of one Bgr24 plane (pylibCZIrw stores channels as given: blue first), scaling in metres."""
    from pylibCZIrw import czi as pyczi

    with pyczi.create_czi(str(path), exist_ok=True) as czi:
        czi.write(np.ascontiguousarray(level0[..., ::-1]), plane={"C": 0, "T": 0, "Z": 0},
                  compression_options="uncompressed:")
        scale = (mpp or 0.0) * 1e-6
        czi.write_metadata("pathkit test", channel_names={0: "TL"}, scale_x=scale, scale_y=scale)
    return path


def write_dicom(source: Path, folder: Path, *, all_levels: bool = True) -> Path:
    """A DICOM WSI series of `source` (a slide tiffslide reads), JPEG-LS lossless; every dyadic level
    down to one tile when `all_levels`, else the source's levels only."""
    from wsidicom.codec.settings import JpegLsSettings
    from wsidicomizer import WsiDicomizer
    from wsidicomizer.sources import TiffSlideSource

    WsiDicomizer.convert(source, folder, add_missing_levels=all_levels, preferred_source=TiffSlideSource,
                         encoding=JpegLsSettings(level=0), workers=1, include_confidential=False)
    return folder


def write_dicom_tiled(folder: Path, levels: list[np.ndarray], mpp: float, *, tile: int = 256) -> Path:
    """A DICOM WSI series written with pydicom alone (seconds faster to import than wsidicomizer): one
    VL Whole Slide Microscopy instance per level, TILED_FULL, uncompressed RGB frames."""
    from pydicom.dataset import Dataset, FileMetaDataset
    from pydicom.sequence import Sequence
    from pydicom.uid import ExplicitVRLittleEndian, VLWholeSlideMicroscopyImageStorage, generate_uid

    folder.mkdir(parents=True, exist_ok=True)
    shared = {name: generate_uid() for name in ("StudyInstanceUID", "SeriesInstanceUID", "FrameOfReferenceUID",
                                                "PyramidUID")}
    h0, w0 = levels[0].shape[:2]
    for i, level in enumerate(levels):
        h, w = level.shape[:2]
        rows, cols = -(-h // tile), -(-w // tile)
        padded = np.zeros((rows * tile, cols * tile, 3), np.uint8)
        padded[:h, :w] = level
        frames = padded.reshape(rows, tile, cols, tile, 3).swapaxes(1, 2).reshape(-1, tile, tile, 3)
        ds = Dataset()
        ds.file_meta = FileMetaDataset()
        ds.file_meta.MediaStorageSOPClassUID = VLWholeSlideMicroscopyImageStorage
        ds.file_meta.MediaStorageSOPInstanceUID = uid = generate_uid()
        ds.file_meta.TransferSyntaxUID = ExplicitVRLittleEndian
        ds.SOPClassUID, ds.SOPInstanceUID = VLWholeSlideMicroscopyImageStorage, uid
        for name, value in shared.items():
            setattr(ds, name, value)
        ds.ImageType = ["ORIGINAL", "PRIMARY", "VOLUME", "NONE"] if i == 0 else ["DERIVED", "PRIMARY", "VOLUME",
                                                                                "RESAMPLED"]
        ds.Modality, ds.SeriesNumber, ds.InstanceNumber = "SM", 1, i + 1
        ds.PatientName, ds.PatientID, ds.StudyDate, ds.StudyTime, ds.AccessionNumber = "", "", "", "", ""
        ds.ReferringPhysicianName, ds.StudyID, ds.Manufacturer = "", "", "pathkit tests"
        ds.DimensionOrganizationType, ds.VolumetricProperties = "TILED_FULL", "VOLUME"
        ds.SamplesPerPixel, ds.PhotometricInterpretation, ds.PlanarConfiguration = 3, "RGB", 0
        ds.BitsAllocated, ds.BitsStored, ds.HighBit, ds.PixelRepresentation = 8, 8, 7, 0
        ds.Rows = ds.Columns = tile
        ds.NumberOfFrames = len(frames)
        ds.TotalPixelMatrixColumns, ds.TotalPixelMatrixRows = w, h
        ds.TotalPixelMatrixFocalPlanes, ds.NumberOfOpticalPaths = 1, 1
        spacing_mm = mpp * (w0 / w) / 1000.0
        ds.ImagedVolumeWidth, ds.ImagedVolumeHeight, ds.ImagedVolumeDepth = w0 * mpp / 1000, h0 * mpp / 1000, 0.001
        ds.ImageOrientationSlide = [0, -1, 0, -1, 0, 0]
        ds.ExtendedDepthOfField, ds.FocusMethod, ds.BurnedInAnnotation, ds.SpecimenLabelInImage = (
            "NO", "AUTO", "NO", "NO")
        origin = Dataset()
        origin.XOffsetInSlideCoordinateSystem, origin.YOffsetInSlideCoordinateSystem = 20.0, 40.0
        ds.TotalPixelMatrixOriginSequence = Sequence([origin])
        optical = Dataset()
        optical.OpticalPathIdentifier = "0"
        illumination = Dataset()
        illumination.CodeValue, illumination.CodingSchemeDesignator, illumination.CodeMeaning = (
            "111744", "DCM", "Brightfield illumination")
        optical.IlluminationTypeCodeSequence = Sequence([illumination])
        colour = Dataset()
        colour.CodeValue, colour.CodingSchemeDesignator, colour.CodeMeaning = "414298005", "SCT", "Full Spectrum"
        optical.IlluminationColorCodeSequence = Sequence([colour])
        ds.OpticalPathSequence = Sequence([optical])
        measures = Dataset()
        measures.PixelSpacing = [spacing_mm, spacing_mm]
        measures.SliceThickness = 0.001
        groups = Dataset()
        groups.PixelMeasuresSequence = Sequence([measures])
        ds.SharedFunctionalGroupsSequence = Sequence([groups])
        ds.PixelData = np.ascontiguousarray(frames).tobytes()
        ds.save_as(folder / f"level{i}.dcm", enforce_file_format=True)
    return folder
