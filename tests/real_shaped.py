"""A small corpus of events shaped like those Segment's libraries send (analytics.js, iOS, Android, and
the Node, Python, Ruby, Go and Java server libraries): their context blocks, id formats, timestamp
styles and property shapes, written for these tests. Two runs' worth, with redeliveries, a type that
changes between runs, colliding keys and a key named like a partition key."""
from __future__ import annotations

AJS_CONTEXT = {
    "library": {"name": "analytics.js", "version": "next-1.53.0"},
    "page": {"path": "/pricing", "referrer": "https://www.google.com/", "search": "?plan=team",
             "title": "Pricing", "url": "https://shop.example/pricing?plan=team"},
    "userAgent": "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko)",
    "locale": "en-US", "ip": "203.0.113.7",
    "campaign": {"name": "spring_sale", "source": "google", "medium": "cpc", "term": "crm", "content": "ad-2"},
}
IOS_CONTEXT = {
    "app": {"build": "112", "name": "Shop", "namespace": "com.example.shop", "version": "4.2.0"},
    "device": {"id": "8E1C4F3A-5B0D-4C43-9F1B-0E2E7C11A2B4", "manufacturer": "Apple", "model": "iPhone14,5",
               "type": "ios", "adTrackingEnabled": False},
    "library": {"name": "analytics-ios", "version": "4.1.8"},
    "locale": "en-GB", "network": {"carrier": "EE", "cellular": False, "wifi": True},
    "os": {"name": "iOS", "version": "17.1.2"}, "screen": {"height": 844, "width": 390},
    "timezone": "Europe/London", "traits": {"anonymousId": "2C9F6C4B-8D0E-4A4C-B8A2-1F6F8C0B9E11"},
}
ANDROID_CONTEXT = {
    "app": {"build": "3051", "name": "Shop", "namespace": "com.example.shop", "version": "4.2.0"},
    "device": {"adTrackingEnabled": True, "advertisingId": "38400000-8cf0-11bd-b23e-10b96e40000d",
               "id": "a0b1c2d3e4f5a6b7", "manufacturer": "Google", "model": "Pixel 7", "name": "panther"},
    "library": {"name": "analytics-android", "version": "4.11.3"},
    "locale": "en-IN", "network": {"bluetooth": False, "carrier": "Jio", "cellular": True, "wifi": False},
    "os": {"name": "Android", "version": "14"}, "screen": {"density": 2.625, "height": 2400, "width": 1080},
    "timezone": "Asia/Kolkata", "userAgent": "Dalvik/2.1.0 (Linux; U; Android 14; Pixel 7 Build/UQ1A.240105.004)",
}


def _server(name, version):
    return {"library": {"name": name, "version": version}}


def _event(kind, message_id, received_at, **fields):
    return {"type": kind, "messageId": message_id, "receivedAt": received_at, **fields}


RUN1 = {
    "ajs.json": [
        _event("page", "ajs-next-1a2b3c", "2024-03-04T10:00:01.120Z", anonymousId="a1f0e6d2-1c4b-4f0e-9d6e-3b2a1c0d9e8f",
               name="Pricing", properties={"path": "/pricing", "title": "Pricing", "url": "https://shop.example/pricing"},
               context=AJS_CONTEXT, integrations={}, timestamp="2024-03-04T10:00:00.981Z",
               sentAt="2024-03-04T10:00:01.002Z", originalTimestamp="2024-03-04T10:00:00.981Z",
               _metadata={"bundled": ["Segment.io"], "unbundled": [], "bundledIds": []}),
        _event("identify", "ajs-next-4d5e6f", "2024-03-04T10:02:00.500Z", anonymousId="a1f0e6d2-1c4b-4f0e-9d6e-3b2a1c0d9e8f",
               userId="user_8812", traits={"email": "ada@example.com", "name": "Ada", "plan": "team", "createdAt":
                                           "2024-03-04T10:01:59.000Z", "address": {"city": "London", "country": "GB"}},
               context=AJS_CONTEXT, timestamp="2024-03-04T10:02:00.321Z"),
        _event("track", "ajs-next-7a8b9c", "2024-03-04T10:05:00.000Z", userId="user_8812", event="Order Completed",
               properties={"order_id": "50314b8e9bcf000000000000", "total": 27.5, "revenue": 25, "currency": "USD",
                           "products": [{"product_id": "507f1f77bcf86cd799439011", "sku": "45790-32", "price": 19.0,
                                         "quantity": 1}, {"product_id": "505bd76785ebb509fc183733", "price": 3.25}],
                           "coupon": None, "discount": 2.5},
               context=AJS_CONTEXT, timestamp="2024-03-04T10:04:59.870Z"),
    ],
    "mobile.json": [
        _event("screen", "C0FFEE00-1111-4A2B-8C3D-000000000001", "2024-03-04T11:00:00Z",
               anonymousId="2C9F6C4B-8D0E-4A4C-B8A2-1F6F8C0B9E11", name="Home", properties={"variant": "B"},
               context=IOS_CONTEXT, timestamp="2024-03-04T10:59:58.123Z", sentAt="2024-03-04T10:59:59.456Z"),
        _event("track", "C0FFEE00-1111-4A2B-8C3D-000000000002", "2024-03-04T11:01:00Z",
               anonymousId="2C9F6C4B-8D0E-4A4C-B8A2-1F6F8C0B9E11", event="Product Viewed",
               properties={"productId": "p-7", "product_id": "p-7-dup", "price": 12, "inStock": True,
                           "viewedAt": "2024-03-04t10:59:59.5+05:30"},
               context=IOS_CONTEXT, timestamp="2024-03-04T11:00:59.999Z"),
        _event("screen", "5d9f0a1e-7c41-4b8e-a0a3-000000000003", "2024-03-04T11:30:00.250Z",
               userId="user_42", name="Checkout", properties={"step": 2},
               context=ANDROID_CONTEXT, timestamp="2024-03-04t11:29:58.000z"),
        _event("track", "5d9f0a1e-7c41-4b8e-a0a3-000000000004", "2024-03-04T11:31:00Z", userId="user_42",
               event="Product Viewed", properties={"price": 12.99, "inStock": "true", "day": "monday"},
               context=ANDROID_CONTEXT, timestamp="2024-03-04T11:30:59.000+0530"),
        # a redelivery of the Android screen, 4 seconds later: a duplicate
        _event("screen", "5d9f0a1e-7c41-4b8e-a0a3-000000000003", "2024-03-04T11:30:04Z", userId="user_42",
               name="Checkout (again)", context=ANDROID_CONTEXT),
    ],
    "server.json": [
        _event("track", "node-9c1c2d3e-0000-4000-8000-000000000005", "2024-03-04T12:00:00Z", userId="user_8812",
               event="Subscription Renewed", properties={"plan": "team", "seats": 12, "amount": 1200.50,
                                                         "renewsAt": "2025-03-04T00:00:00.000Z"},
               context=_server("analytics-node", "6.2.0"), timestamp="2024-03-04T11:59:59.999Z"),
        _event("identify", "py-6a0e1f2b-1111-4222-8333-000000000006", "2024-03-04T12:10:00Z", userId="user_99",
               traits={"email": "grace@example.com", "logins": 3, "createdAt": "2023-12-01T08:30:00.123456+00:00",
                       "address": {"city": "Bengaluru", "postalCode": "560001"}},
               context=_server("analytics-python", "2.3.2"), timestamp="2024-03-04T12:09:59.123456+00:00"),
        _event("group", "ruby-0f1e2d3c-2222-4333-8444-000000000007", "2024-03-04T12:20:00Z", userId="user_99",
               groupId="acme", traits={"name": "Acme Inc", "employees": 250, "industry": "Retail"},
               context=_server("analytics-ruby", "2.4.0"), timestamp="2024-03-04T17:49:59.000+05:30"),
        _event("alias", "ruby-0f1e2d3c-2222-4333-8444-000000000008", "2024-03-04T12:21:00Z", previousId="anon-77",
               userId="user_99", context=_server("analytics-ruby", "2.4.0")),
        _event("track", "go-2b3c4d5e-3333-4444-8555-000000000009", "2024-03-04T12:30:00Z", userId="user_7",
               event="Order Completed", properties={"order_id": "go-1", "total": 10, "revenue": 9.99, "currency": "EUR",
                                                    "products": [], "tags": ["gift", 1e5]},
               context=_server("analytics-go", "3.3.0"), timestamp="2024-03-04T12:29:59.123456789Z"),
        _event("page", "java-3c4d5e6f-4444-4555-8666-00000000000a", "2024-03-04T12:40:00Z", userId="user_7",
               name="Docs", properties={"url": "https://docs.example/", "title": None},
               context=_server("analytics-java", "3.5.1"), timestamp="2024-03-04T12:39:59.000Z"),
    ],
}

RUN2 = {
    "later.json": [
        # redelivered 2 days later: a duplicate; and 9 days later: a new event
        _event("track", "ajs-next-7a8b9c", "2024-03-06T10:05:00.000Z", userId="user_8812", event="Order Completed",
               properties={"total": 1}, context=AJS_CONTEXT),
        _event("identify", "ajs-next-4d5e6f", "2024-03-13T10:02:00.500Z", userId="user_8812",
               traits={"email": "ada@new.example", "plan": "enterprise"}, context=AJS_CONTEXT),
        # a type that changes: seats was bigint; an orders' total in words; a new column
        _event("track", "node-9c1c2d3e-0000-4000-8000-00000000000b", "2024-03-06T12:00:00Z", userId="user_8812",
               event="Subscription Renewed", properties={"plan": "team", "seats": "13", "amount": 1300,
                                                         "autoRenew": True},
               context=_server("analytics-node", "6.2.0"), timestamp="2024-03-06T11:59:59.999Z"),
        _event("track", "go-2b3c4d5e-3333-4444-8555-00000000000c", "2024-03-06T12:30:00Z", userId="user_7",
               event="Order Completed", properties={"order_id": "go-2", "total": "ten", "revenue": "9.5"},
               context=_server("analytics-go", "3.3.0"), timestamp="2024-03-06T12:29:59Z"),
        _event("screen", "C0FFEE00-1111-4A2B-8C3D-00000000000d", "2024-03-06T13:00:00Z",
               anonymousId="2C9F6C4B-8D0E-4A4C-B8A2-1F6F8C0B9E11", name="Home", properties={"variant": 3},
               context=IOS_CONTEXT, timestamp="2024-03-06T12:59:58.123Z"),
    ],
}
