"""Image preprocessing and augmentation layers that run on the device batch as kernels."""

from kerasish.layers.preprocessing.image_color import RandomBrightness, RandomContrast
from kerasish.layers.preprocessing.image_geometric import (
    CenterCrop,
    RandomCrop,
    RandomFlip,
    RandomRotation,
    RandomTranslation,
    RandomZoom,
    Resizing,
)

PREPROCESSING_LAYERS = (RandomFlip, RandomRotation, RandomZoom, RandomTranslation, RandomCrop,
                        RandomContrast, RandomBrightness, Resizing, CenterCrop)

__all__ = [cls.__name__ for cls in PREPROCESSING_LAYERS] + ["PREPROCESSING_LAYERS"]
