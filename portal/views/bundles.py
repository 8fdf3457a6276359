"""Bundle pages: the list with an upload form, and one bundle's live status, counts and rejections."""
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import HttpResponseForbidden
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse

from accounting.services.reports import QueryError
from ingest.parsers import PARSERS
from ingest.services.bundles import create_bundle
from ingest.tasks import queue_ingest
from portal.api.bundles import visible_bundles
from portal.listing import filtered, page_of
from portal.resources import BUNDLES


@login_required
def bundle_list(request):
    can_upload = request.user.has_perm("ingest.add_bundle")
    if request.method == "POST":
        if not can_upload:
            return HttpResponseForbidden("You need the permission to add bundles.")
        upload = request.FILES.get("file")
        fmt = request.POST.get("format", "")
        if upload is None:
            messages.error(request, "Choose a file to upload.")
        elif fmt and fmt not in PARSERS:
            messages.error(request, f"Unknown format {fmt!r}.")
        else:
            from django.conf import settings

            try:
                with transaction.atomic():
                    bundle = create_bundle(upload, upload.name, fmt=fmt, user=request.user, max_bytes=settings.BUNDLE_MAX_UPLOAD_BYTES)
                    queue_ingest(bundle.pk)
            except ValueError as exc:
                messages.error(request, str(exc))
            else:
                return redirect("bundle-detail", pk=bundle.pk)
    error = page = None
    try:
        page = page_of(BUNDLES, filtered(request.user, BUNDLES, request.GET), request.GET)
    except QueryError as exc:
        error = str(exc)
    query = request.GET.urlencode()
    context = {
        "page": page,
        "error": error,
        "can_upload": can_upload,
        "formats": sorted(PARSERS),
        "params": request.GET,
        "csv_url": f"{reverse('api-bundles')}?{query + '&' if query else ''}format=csv",
    }
    return render(request, "portal/bundle_list.html", context, status=400 if error else 200)


@login_required
def bundle_detail(request, pk: int):
    bundle = get_object_or_404(visible_bundles(request.user), pk=pk)
    errors = bundle.errors.all()[:200]
    return render(request, "portal/bundle_detail.html", {"bundle": bundle, "errors": errors})
