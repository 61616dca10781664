"""Errors that faircert reports to users.

Every problem with what the user gave us (a file, a domain, an option) raises a subclass of
`FaircertError`; the CLI prints its message and exits with code 3. Anything else is a bug.
"""


class FaircertError(Exception):
    """Base class of all user-facing faircert errors."""


class ModelFormatError(FaircertError):
    """A model file or object that cannot be read or is not supported."""


class UnsupportedModelError(ModelFormatError):
    """A classifier read fine but of a kind no IR holds (an RBF SVC, k-nearest neighbours): only
    its predictions can be used (the per-row audit calls it as a black box)."""


class DomainError(FaircertError):
    """An input domain that is malformed or does not fit the model."""


class PropertyError(FaircertError):
    """A property (protected features, epsilon, thresholds, budgets) that cannot be checked."""


class DataError(FaircertError):
    """A dataset that cannot be used as given (unknown columns, empty groups, ...)."""


class DeviceMemoryError(MemoryError):
    """The accelerator ran out of memory before a verdict (it holds less than the run may take);
    the message says what to lower."""
