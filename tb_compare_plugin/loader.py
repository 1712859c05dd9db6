"""TensorBoard entry point.  Deliberately light: only base_plugin and the stdlib are
imported here, so a broken heavy import can never stop TensorBoard from starting;
the real plugin module is imported inside ``load()``, where TensorBoard catches failures.
"""
from tensorboard.plugins import base_plugin


class ProfileCompareLoader(base_plugin.TBLoader):
    """Creates :class:`tb_compare_plugin.plugin.ProfileComparePlugin`."""

    def define_flags(self, parser):
        group = parser.add_argument_group("profile_compare")
        group.add_argument("--profile_compare_export_dir", type=str, default="",
                           help="Folder where the PROFILE COMPARE tab saves workbooks when the browser "
                                "cannot download them (VSCode). Default: TB_COMPARE_EXPORT_DIR or "
                                "~/tb_compare_exports. Never inside the logdir.")
        group.add_argument("--profile_compare_scan_interval", type=float, default=5.0,
                           help="Seconds between rescans of the logdir for new or changed profiles.")
        group.add_argument("--profile_compare_max_expanded_mb", type=float, default=0.0,
                           help="Refuse a trace that is, or decompresses to, more than this many MB "
                                "(default: TB_COMPARE_MAX_EXPANDED_MB, else 8192).")
        group.add_argument("--profile_compare_dask_scheduler", type=str, default="",
                           help="Address of a Dask scheduler (tcp://HOST:8786) whose workers see the "
                                "same filesystem: a cluster run's per-rank work runs there as Dask tasks "
                                "(needs tb-compare-plugin[dask]). Default: TB_COMPARE_DASK_SCHEDULER, "
                                "else this machine's cores.")

    def load(self, context):
        from .plugin import ProfileComparePlugin
        return ProfileComparePlugin(context)
