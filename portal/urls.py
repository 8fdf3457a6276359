from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.views.generic import RedirectView

from portal.views import bundles, categories, usage

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="usage-by-site", permanent=False), name="home"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("usage/sites/", usage.usage_by_site, name="usage-by-site"),
    path("categories/", categories.categories_page, name="categories"),
    path("bundles/", bundles.bundle_list, name="bundle-list"),
    path("bundles/<int:pk>/", bundles.bundle_detail, name="bundle-detail"),
    path("api/v1/", include("portal.api.urls")),
    path("admin/", admin.site.urls),
]
