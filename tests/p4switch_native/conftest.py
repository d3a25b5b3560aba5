"""The native pipeline's tests build their C modules in a private cache."""

import os
import tempfile

os.environ.setdefault("P4MCC_NATIVE_CACHE", os.path.join(tempfile.gettempdir(), "p4mcc-native-tests"))
