"""Running a bundle's ingest from a management command: a progress bar, then the contract's summary line
(`bundle=<id> format=<name> read=<n> inserted=<n> duplicates=<n> rejected=<n>`) and its first rejections."""
from tqdm import tqdm

from ingest.models import Bundle
from ingest.services.bundles import ingest_bundle

REJECTIONS_SHOWN = 20


def ingest_with_report(command, bundle: Bundle, label: str, *, show_updated: bool = False) -> Bundle:
    """Ingest `bundle` with a progress bar on the command's stderr and report it; returns the bundle."""
    with tqdm(total=bundle.size_bytes, unit="B", unit_scale=True, desc=label, disable=None, file=command.stderr._out) as bar:

        def progress(done, total):
            bar.n = done
            bar.refresh()

        bundle = ingest_bundle(bundle.pk, progress=progress)
    line = (
        f"bundle={bundle.pk} format={bundle.format or '-'} read={bundle.records_read} "
        f"inserted={bundle.records_inserted} duplicates={bundle.duplicates} rejected={bundle.rejected}"
    )
    command.stdout.write(line + (f" updated={bundle.records_updated}" if show_updated else ""))
    for error in bundle.errors.all()[:REJECTIONS_SHOWN]:
        command.stderr.write(f"  {error.file}:{error.line or '-'}: {error.reason}")
    if bundle.rejected > REJECTIONS_SHOWN:
        command.stderr.write(f"  ... and {bundle.rejected - REJECTIONS_SHOWN} more rejections (see the bundle page)")
    return bundle
