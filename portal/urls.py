from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from portal.views import bundles, categories, dashboard, details, explorer, lists, usage

urlpatterns = [
    path("", dashboard.dashboard, name="home"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("explore/", explorer.explorer_page, name="explorer"),
    path("usage/sites/", usage.usage_by_site, name="usage-by-site"),
    path("categories/", categories.categories_page, name="categories"),
    path("sites/", lists.site_list, name="site-list"),
    path("sites/<int:pk>/", details.site_detail, name="site-detail"),
    path("vos/", lists.vo_list, name="vo-list"),
    path("vos/<int:pk>/", details.vo_detail, name="vo-detail"),
    path("projects/", lists.project_list, name="project-list"),
    path("projects/<int:pk>/", details.project_detail, name="project-detail"),
    path("science-domains/", lists.science_domain_list, name="science-domain-list"),
    path("science-domains/<int:pk>/", details.science_domain_detail, name="science-domain-detail"),
    path("people/", lists.person_list, name="person-list"),
    path("people/<int:pk>/", details.person_detail, name="person-detail"),
    path("records/", lists.record_list, name="record-list"),
    path("bundles/", bundles.bundle_list, name="bundle-list"),
    path("bundles/<int:pk>/", bundles.bundle_detail, name="bundle-detail"),
    path("", include("portal.quota_urls")),  # quotas, notices, reconciliation, publishing
    path("api/v1/", include("portal.api.urls")),
    path("admin/", admin.site.urls),
]
