from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.routers import SimpleRouter

from portal.api import resources
from portal.api.bundles import BundleDetailView, BundleUploadView
from portal.api.categories import CategoriesView
from portal.api.usage import UsageView

router = SimpleRouter()
router.register("sites", resources.SiteViewSet, basename="api-site")
router.register("vos", resources.VOViewSet, basename="api-vo")
router.register("projects", resources.ProjectViewSet, basename="api-project")
router.register("science-domains", resources.ScienceDomainViewSet, basename="api-science-domain")
router.register("people", resources.PersonViewSet, basename="api-person")
router.register("records", resources.UsageRecordViewSet, basename="api-record")

urlpatterns = [
    path("bundles/", BundleUploadView.as_view(), name="api-bundles"),
    path("bundles/<int:pk>/", BundleDetailView.as_view(), name="api-bundle-detail"),
    path("usage/", UsageView.as_view(), name="api-usage"),
    path("categories/", CategoriesView.as_view(), name="api-categories"),
    path("", include("portal.api.quota_urls")),  # quotas, reconciliation, publishing
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    *router.urls,
]
