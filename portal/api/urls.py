from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from portal.api.bundles import BundleDetailView, BundleUploadView
from portal.api.categories import CategoriesView
from portal.api.usage import UsageView

urlpatterns = [
    path("bundles/", BundleUploadView.as_view(), name="api-bundles"),
    path("bundles/<int:pk>/", BundleDetailView.as_view(), name="api-bundle-detail"),
    path("usage/", UsageView.as_view(), name="api-usage"),
    path("categories/", CategoriesView.as_view(), name="api-categories"),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
]
