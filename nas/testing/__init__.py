"""Contract suites: a test module joins one by subclassing it and providing the fixtures it names."""
from nas.testing.spaces import SpaceContract  # noqa: F401
from nas.testing.strategies import StrategyContract  # noqa: F401
from nas.testing.pruners import PrunerContract  # noqa: F401
