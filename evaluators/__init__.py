"""The PyTorch side: genome -> ``nn.Module``, datasets, training and validation, exports.

Imports ``nas``, torch and torchvision, never Django. Filled in by the [evaluators] issue.
"""
