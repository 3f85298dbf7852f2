"""Keras's callback API: hooks into fit/evaluate/predict, and the built-in callbacks."""

from kerasish.callbacks.backup_and_restore import BackupAndRestore
from kerasish.callbacks.callback import Callback
from kerasish.callbacks.callback_list import CallbackList
from kerasish.callbacks.csv_logger import CSVLogger
from kerasish.callbacks.early_stopping import EarlyStopping
from kerasish.callbacks.history import History
from kerasish.callbacks.lambda_callback import LambdaCallback
from kerasish.callbacks.learning_rate import LearningRateScheduler, ReduceLROnPlateau
from kerasish.callbacks.model_checkpoint import ModelCheckpoint
from kerasish.callbacks.progbar_logger import ProgbarLogger
from kerasish.callbacks.tensorboard import TensorBoard
from kerasish.callbacks.terminate_on_nan import TerminateOnNaN

__all__ = [
    "BackupAndRestore",
    "CSVLogger",
    "Callback",
    "CallbackList",
    "EarlyStopping",
    "History",
    "LambdaCallback",
    "LearningRateScheduler",
    "ModelCheckpoint",
    "ProgbarLogger",
    "ReduceLROnPlateau",
    "TensorBoard",
    "TerminateOnNaN",
]
