"""ssl.principal.mapping.rules, with cases from Kafka's SslPrincipalMapperTest."""

from __future__ import annotations

import pytest

from odradek.security.principal_mapping import NoMatchingRule, map_name, parse_rules, rfc2253


@pytest.mark.parametrize(("rules", "dn", "name"), [
    ("DEFAULT", "CN=Duke,OU=JavaSoft,O=Sun Microsystems,C=US",
     "CN=Duke,OU=JavaSoft,O=Sun Microsystems,C=US"),
    ("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT",
     "CN=kafka1,OU=ServiceUsers,O=Org,C=US", "kafka1"),
    ("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT",
     "CN=Duke,OU=JavaSoft,O=Sun Microsystems,C=US",
     "CN=Duke,OU=JavaSoft,O=Sun Microsystems,C=US"),
    ("RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,DEFAULT",
     "CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Santa Clara,ST=CA,C=US", "duke@javasoft"),
    ("RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/U,DEFAULT",
     "CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Santa Clara,ST=CA,C=US", "DUKE@JAVASOFT"),
    ("RULE:^CN=(.*?),OU=(.*?)$/$1@$3/", "CN=a,OU=b", "a@$3"),
    ("RULE:^CN=(.*?),OU=(.*?)$/$1@$21/", "CN=a,OU=b", "a@b1"),
    ("RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U", "cn=a,ou=b,dc=c,dc=d", "A@B"),
])
def test_rules_map_names_as_kafka(rules: str, dn: str, name: str) -> None:
    assert map_name(parse_rules(rules), dn) == name


def test_no_matching_rule_refuses() -> None:
    with pytest.raises(NoMatchingRule):
        map_name(parse_rules("RULE:^CN=(.*)$/$1/"), "OU=x")


@pytest.mark.parametrize("rules", [
    "DEFAULT/L", "DEFAUL", "DEFAULT/U", "RULE:CN=(.*?),OU=ServiceUsers.*/$1",
    "RULE:CN=(.*?),OU=ServiceUsers.*/$1/L/U", "RULE:CN=(.*?),OU=ServiceUsers.*/L",
    "RULE:CN=(.*?),OU=ServiceUsers.*/U", "RULE:CN=(.*?),OU=ServiceUsers.*/LU",
])
def test_invalid_rules_are_refused(rules: str) -> None:
    with pytest.raises(ValueError, match="Invalid rule"):
        parse_rules(rules)


def test_peer_certificate_subject_in_rfc_2253_order_and_escaping() -> None:
    subject = ((("countryName", "US"),), (("organizationName", "Acme, Inc"),),
               (("commonName", "alice"),))
    assert rfc2253(subject) == "CN=alice,O=Acme\\, Inc,C=US"
