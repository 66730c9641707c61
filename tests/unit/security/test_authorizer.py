"""StandardAuthorizer's decisions: literal, prefixed and wildcard patterns, implied
operations, DENY over ALLOW, super users, allow.everyone.if.no.acl.found, hosts; the indexed
authorizer agrees with a scan of every ACL (Kafka's rules written out plainly)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.security.acls import (
    SUPPORTED_OPERATIONS,
    AclBinding,
    AclFilter,
    AclOperation,
    AclPermissionType,
    InvalidAclError,
    PatternType,
    ResourceType,
    validate_new_acl,
)
from odradek.security.authorizer import (
    StandardAuthorizer,
    acl_result,
    parse_super_users,
)

TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
Op = AclOperation
ALICE = "User:alice"
HOST = "10.0.0.1"


def acl(name: str, operation: AclOperation, permission: AclPermissionType = ALLOW,
        pattern: PatternType = LITERAL, principal: str = ALICE, host: str = "*",
        resource_type: ResourceType = TOPIC) -> AclBinding:
    return AclBinding(resource_type, name, pattern, principal, host, operation, permission)


def authorizer(*acls: AclBinding, super_users: tuple[str, ...] = (),
               allow_if_no_acl: bool = False) -> StandardAuthorizer:
    return StandardAuthorizer(acls, super_users, allow_if_no_acl)


def allowed(auth: StandardAuthorizer, operation: AclOperation, name: str,
            principal: str = ALICE, host: str = HOST,
            resource_type: ResourceType = TOPIC) -> bool:
    return auth.authorize(principal, host, operation, resource_type, name)


def test_no_acl_denies_unless_everyone_is_allowed() -> None:
    assert not allowed(authorizer(), Op.READ, "orders")
    assert allowed(authorizer(allow_if_no_acl=True), Op.READ, "orders")


def test_an_acl_on_the_resource_for_someone_else_denies_even_when_everyone_is_allowed() -> None:
    auth = authorizer(acl("orders", Op.READ, principal="User:bob"), allow_if_no_acl=True)
    assert not allowed(auth, Op.READ, "orders")
    assert allowed(auth, Op.READ, "orders", principal="User:bob")
    assert allowed(auth, Op.READ, "payments")


def test_literal_acls_match_only_their_name() -> None:
    auth = authorizer(acl("orders", Op.WRITE))
    assert allowed(auth, Op.WRITE, "orders")
    assert not allowed(auth, Op.WRITE, "orders2")
    assert not allowed(auth, Op.WRITE, "order")
    assert not allowed(auth, Op.READ, "orders")


def test_prefixed_acls_match_names_that_start_with_them() -> None:
    auth = authorizer(acl("team-a.", Op.READ, pattern=PREFIXED))
    assert allowed(auth, Op.READ, "team-a.orders")
    assert allowed(auth, Op.READ, "team-a.")
    assert not allowed(auth, Op.READ, "team-b.orders")
    assert not allowed(auth, Op.READ, "team-a")


def test_the_wildcard_name_matches_every_resource_of_its_type() -> None:
    auth = authorizer(acl("*", Op.READ))
    assert allowed(auth, Op.READ, "anything")
    assert not allowed(auth, Op.READ, "anything", resource_type=GROUP)


def test_deny_wins_over_allow_wherever_it_comes_from() -> None:
    auth = authorizer(acl("*", Op.ALL), acl("secret.", Op.READ, DENY, PREFIXED))
    assert allowed(auth, Op.READ, "public")
    assert not allowed(auth, Op.READ, "secret.keys")
    assert allowed(auth, Op.WRITE, "secret.keys")
    everyone = authorizer(acl("orders", Op.READ), acl("orders", Op.READ, DENY, principal="User:*"))
    assert not allowed(everyone, Op.READ, "orders")


@pytest.mark.parametrize("granted", [Op.READ, Op.WRITE, Op.DELETE, Op.ALTER, Op.DESCRIBE])
def test_read_write_delete_and_alter_imply_describe(granted: AclOperation) -> None:
    assert allowed(authorizer(acl("orders", granted)), Op.DESCRIBE, "orders")


@pytest.mark.parametrize("granted", [Op.CREATE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS])
def test_other_operations_do_not_imply_describe(granted: AclOperation) -> None:
    assert not allowed(authorizer(acl("orders", granted)), Op.DESCRIBE, "orders")


def test_alter_configs_implies_describe_configs_but_a_deny_implies_nothing() -> None:
    assert allowed(authorizer(acl("orders", Op.ALTER_CONFIGS)), Op.DESCRIBE_CONFIGS, "orders")
    auth = authorizer(acl("orders", Op.ALL), acl("orders", Op.READ, DENY))
    assert not allowed(auth, Op.READ, "orders")
    assert allowed(auth, Op.DESCRIBE, "orders")


def test_hosts_restrict_an_acl() -> None:
    auth = authorizer(acl("orders", Op.READ, host="10.0.0.1"))
    assert allowed(auth, Op.READ, "orders", host="10.0.0.1")
    assert not allowed(auth, Op.READ, "orders", host="10.0.0.2")


def test_super_users_are_allowed_even_against_a_deny() -> None:
    auth = authorizer(acl("*", Op.ALL, DENY, principal="User:*"), super_users=("User:admin",))
    assert allowed(auth, Op.DELETE, "orders", principal="User:admin")
    assert not allowed(auth, Op.DELETE, "orders")


def test_super_users_are_principals_separated_by_semicolons() -> None:
    assert parse_super_users(" User:admin ; User:broker;") == {"User:admin", "User:broker"}
    assert parse_super_users("") == frozenset()
    with pytest.raises(ValueError):
        parse_super_users("admin")


def test_write_on_some_topic_counts_for_the_resource_type() -> None:
    """KIP-679: IDEMPOTENT_WRITE is granted by WRITE on any topic; a prefixed DENY that
    covers every allowed name takes it back."""
    assert not authorizer().authorize_by_resource_type(ALICE, HOST, Op.WRITE, TOPIC)
    auth = authorizer(acl("logs.", Op.WRITE, pattern=PREFIXED))
    assert auth.authorize_by_resource_type(ALICE, HOST, Op.WRITE, TOPIC)
    denied = authorizer(acl("logs.app", Op.WRITE), acl("logs.", Op.WRITE, DENY, PREFIXED))
    assert not denied.authorize_by_resource_type(ALICE, HOST, Op.WRITE, TOPIC)
    assert authorizer(acl("*", Op.WRITE)).authorize_by_resource_type(ALICE, HOST, Op.WRITE, TOPIC)


def test_authorized_operations_are_a_bit_field_of_the_type_s_operations() -> None:
    auth = authorizer(acl("orders", Op.READ))
    assert auth.authorized_operations(ALICE, HOST, TOPIC, "orders") == (
        1 << Op.READ | 1 << Op.DESCRIBE)
    everything = authorizer(super_users=(ALICE,))
    assert everything.authorized_operations(ALICE, HOST, CLUSTER, "kafka-cluster") == sum(
        1 << op for op in SUPPORTED_OPERATIONS[CLUSTER])


def test_new_acls_are_validated_as_kafka_does() -> None:
    validate_new_acl(acl("orders", Op.READ))
    for bad in (acl("", Op.READ), acl("orders", Op.ANY), acl("orders", Op.READ, principal="bob"),
                acl("orders", Op.READ, pattern=PatternType.MATCH),
                acl("orders", Op.READ, resource_type=ResourceType.ANY),
                acl("orders", Op.READ, AclPermissionType.ANY)):
        with pytest.raises(InvalidAclError):
            validate_new_acl(bad)


def test_filters_match_as_kafka_s_acl_binding_filters() -> None:
    literal, prefixed, wildcard = acl("orders", Op.READ), acl("ord", Op.READ, pattern=PREFIXED), \
        acl("*", Op.READ)
    match = AclFilter(TOPIC, "orders", PatternType.MATCH)
    assert all(match.matches(a) for a in (literal, prefixed, wildcard))
    assert not match.matches(acl("orders2", Op.READ))
    assert [a for a in (literal, prefixed, wildcard)
            if AclFilter(TOPIC, "orders", PatternType.ANY).matches(a)] == [literal]
    assert AclFilter(principal="User:bob").matches(literal) is False
    assert AclFilter(operation=Op.READ, permission_type=ALLOW).matches(prefixed)


# --- the index agrees with a plain scan --------------------------------------------------

NAMES = ["a", "ab", "abc", "b", "*"]
PRINCIPALS = [ALICE, "User:bob", "User:*"]


def scanned(acls: list[AclBinding], principal: str, host: str, operation: AclOperation,
            resource_type: ResourceType, name: str, allow_if_no_acl: bool) -> bool:
    """Kafka's rule over every ACL, without an index."""
    applying = [a for a in acls if a.resource_type == resource_type and (
        (a.pattern_type == LITERAL and a.resource_name in (name, "*"))
        or (a.pattern_type == PREFIXED and name.startswith(a.resource_name)))]
    results = [acl_result(a, (principal, "User:*"), host, operation) for a in applying]
    if DENY in results:
        return False
    return ALLOW in results or (not applying and allow_if_no_acl)


acls_strategy = st.lists(st.builds(
    AclBinding, st.sampled_from([TOPIC, GROUP]), st.sampled_from(NAMES),
    st.sampled_from([LITERAL, PREFIXED]), st.sampled_from(PRINCIPALS),
    st.sampled_from(["*", HOST, "10.0.0.2"]),
    st.sampled_from([Op.ALL, Op.READ, Op.WRITE, Op.DESCRIBE, Op.ALTER_CONFIGS]),
    st.sampled_from([ALLOW, DENY])), max_size=12)


@settings(max_examples=300, deadline=None)
@given(acls_strategy, st.sampled_from([ALICE, "User:bob"]), st.sampled_from([HOST, "10.0.0.2"]),
       st.sampled_from([Op.READ, Op.WRITE, Op.DESCRIBE, Op.DESCRIBE_CONFIGS]),
       st.sampled_from([TOPIC, GROUP]), st.sampled_from(["a", "abc", "abd", "b", "c"]),
       st.booleans())
def test_the_index_decides_as_a_scan_of_every_acl(
        acls: list[AclBinding], principal: str, host: str, operation: AclOperation,
        resource_type: ResourceType, name: str, allow_if_no_acl: bool) -> None:
    auth = StandardAuthorizer(acls, (), allow_if_no_acl)
    expected = scanned(acls, principal, host, operation, resource_type, name, allow_if_no_acl)
    assert auth.authorize(principal, host, operation, resource_type, name) is expected
    assert auth.authorize(principal, host, operation, resource_type, name) is expected
