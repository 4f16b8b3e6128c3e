"""Compute the package list so a new subpackage is never missing from the wheel.

The repository's top-level folders are mapped onto one import root, ``pumice``:
``scheduler/`` is ``pumice``, ``plugins/`` is ``pumice.plugins``, ``actions/`` is
``pumice.actions`` and ``conf/`` is ``pumice.conf`` (package data).
"""

from setuptools import find_packages, setup

ROOTS = {"pumice": "scheduler", "pumice.plugins": "plugins", "pumice.actions": "actions",
         "pumice.conf": "conf"}

packages: list[str] = []
package_dir: dict[str, str] = {}
for prefix, folder in ROOTS.items():
    packages.append(prefix)
    package_dir[prefix] = folder
    for sub in find_packages(where=folder):
        packages.append(f"{prefix}.{sub}")
        package_dir[f"{prefix}.{sub}"] = f"{folder}/{sub.replace('.', '/')}"

setup(packages=packages, package_dir=package_dir)
