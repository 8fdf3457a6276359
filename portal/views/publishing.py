"""The publishing page (admins): forms that download APEL summary messages and NCSA files from the API."""
from django.shortcuts import render

from accounting.models import Site
from accounting.services.ncsa_publish import BASES
from accounting.services.quotas import add_months, today
from portal.quota_access import admin_required


@admin_required
def publishing(request):
    last_month = add_months(today().replace(day=1), -1)
    return render(request, "portal/publishing.html", {
        "sites": Site.objects.order_by("name").values_list("name", flat=True),
        "bases": BASES, "last_month": last_month, "this_month": today().replace(day=1),
    })  # fmt: skip
