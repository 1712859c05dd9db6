"""Install tb-compare: the TensorBoard plugin `profile_compare` and the `tb-compare` CLI.

The frontend bundle in tb_compare_plugin/static/ is prebuilt and committed, so
installing needs no Node.js.
"""
from setuptools import setup, find_packages

NUMBA = ('numba>=0.59; platform_python_implementation == "CPython" and python_version < "3.15" and '
         '(platform_machine == "x86_64" or platform_machine == "AMD64" or platform_machine == "aarch64" '
         'or platform_machine == "arm64")')

setup(
    name="tb-compare-plugin",
    version="0.1.0",
    description="Compare two deep-learning performance profiles (GPU/NPU) in TensorBoard and on the CLI",
    long_description=open("README.md", encoding="utf-8").read() if __import__("os").path.exists("README.md") else "",
    long_description_content_type="text/markdown",
    packages=find_packages(include=["tb_compare_plugin", "tb_compare_plugin.*"]),
    package_data={"tb_compare_plugin": ["static/*"]},
    include_package_data=True,
    python_requires=">=3.9",
    install_requires=[
        "tensorboard>=2.11",
        "werkzeug>=2.0",
        "numpy>=1.22",
        "pandas>=1.5",
        "msgspec>=0.18",
        # the fast Kineto parser (loaders/kineto_scan.py): numba ships wheels for CPython 3.9-3.14 on
        # Linux x86_64/aarch64, macOS and Windows, so no compiler is needed; elsewhere it is left out
        # and traces are parsed by the general decoder (the profile's warnings say so)
        NUMBA,
        # the workbook's sheet parts deflated by ISA-L (presenters/xlsx_writer.py, ~5x zlib's speed;
        # zlib is used where it is not installed): wheels for CPython on these machines
        'isal>=1.6; platform_python_implementation == "CPython" and (platform_machine == "x86_64" or '
        'platform_machine == "AMD64" or platform_machine == "aarch64" or platform_machine == "arm64")',
    ],
    extras_require={
        "test": ["pytest>=7", "pytest-xdist>=3", "hypothesis>=6", "openpyxl>=3.1", "playwright>=1.40",
                 "distributed>=2023.1"],   # tests/test_cluster_scale.py starts a real LocalCluster
        # per-rank cluster work as Dask tasks (--dask-scheduler ADDRESS); imported only when asked for
        "dask": ["dask[distributed]>=2023.1"],
        "fast": [NUMBA],                     # kept for old install lines: numba is a requirement now
        "bench": ["xlsxwriter>=3"],          # bench/xlsx_bench.py only; never imported by the package
    },
    entry_points={
        "tensorboard_plugins": [
            "profile_compare = tb_compare_plugin.loader:ProfileCompareLoader",
        ],
        "console_scripts": [
            "tb-compare = tb_compare_plugin.cli:main",
        ],
    },
    classifiers=[
        "Programming Language :: Python :: 3",
        "Framework :: TensorBoard" if False else "Topic :: Scientific/Engineering :: Artificial Intelligence",
    ],
)
