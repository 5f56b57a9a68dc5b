//! MCP Skills (SEP-2640) on the face: local skill directories and the upstreams' skills
//! (origin-scoped, approved manifests only) in `skills/list` and `skills/get`; directory reads;
//! and skill file reads, which for an upstream skill go to the upstream at read time and are
//! passed on only when the bytes are what the pinned manifest promises. Each such read is a
//! `read_only` invocation of [`SKILL_READ`] on the skill's upstream: decided by the policy
//! enforcement point like a tool call, and journaled (who loaded which file of which manifest).

use rmcp::RoleServer;
use rmcp::handler::server::skill_catalog::SkillCatalog;
use rmcp::model::{
    ClientRequest, ErrorCode, ErrorData, GetSkillRequestParams, GetSkillResult, ListSkillsResult,
    PaginatedRequestParams, ReadResourceDirectoryRequest, ReadResourceDirectoryRequestParams,
    ReadResourceDirectoryResult, ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, ServerResult,
    Skill,
};
use rmcp::service::RequestContext;
use switchyard_contract::{CallContext, InvocationState, Submission};
use tracing::warn;

use super::{McpFace, internal, invalid, page, principal, served, unexpected};
use crate::catalog::SkillEntry;
use crate::skills::{self, SKILL_READ, SkillRead, scoped, unscoped};

impl McpFace {
    /// The local skill directories this endpoint serves.
    fn local_skills(&self) -> impl Iterator<Item = &SkillCatalog> {
        self.shared.skills.served(|name| self.server.serves_skills(name))
    }

    /// Whether this endpoint declares the skills extension: it serves a local skill directory or
    /// an upstream with skills.
    pub(super) fn offers_skills(&self) -> bool {
        self.local_skills().next().is_some() || self.shared.catalog.has_skills(self.includes())
    }

    /// Every skill served here: local ones, then each included upstream's approved ones.
    fn skills(&self) -> Vec<Skill> {
        let local = self.local_skills().flat_map(SkillCatalog::skills);
        let upstream = self.shared.catalog.offers(self.includes()).into_iter().flat_map(|o| o.skills);
        local.chain(upstream.filter(|k| k.approved).map(|k| k.exposed)).collect()
    }

    /// The `SKILL.md` of every skill, for `resources/list`.
    pub(super) fn skill_resources(&self) -> Vec<Resource> {
        let local = self.local_skills().flat_map(SkillCatalog::resources);
        let upstream = self.shared.catalog.offers(self.includes()).into_iter().flat_map(|o| o.skills);
        local
            .chain(upstream.filter(|k| k.approved).map(|k| {
                let f = &k.exposed.frontmatter;
                Resource::new(k.exposed.uri.clone(), f.name.clone())
                    .with_description(f.description.clone())
                    .with_mime_type("text/markdown")
            }))
            .collect()
    }

    pub(super) async fn list_skills_here(
        &self,
        request: Option<PaginatedRequestParams>,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, ErrorData> {
        self.shared.catalog.refresh_approvals().await;
        let all = self.skills();
        let (items, next) = page(&all, request.as_ref().and_then(|r| r.cursor.as_deref()), self.shared.page_size)?;
        let mut r = ListSkillsResult::with_all_items(items);
        r.next_cursor = next;
        Ok(served::in_era!(r, self.era(ctx).as_ref()))
    }

    pub(super) async fn get_skill_here(
        &self,
        request: GetSkillRequestParams,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, ErrorData> {
        self.shared.catalog.refresh_approvals().await;
        let skill = self.skills().into_iter().find(|s| s.uri == request.uri);
        let skill = skill.ok_or_else(|| invalid(format!("unknown skill {}", request.uri)))?;
        Ok(served::in_era!(GetSkillResult::new(skill), self.era(ctx).as_ref()))
    }

    /// An approved upstream skill covering `uri` (its manifest, a file or a directory of it).
    async fn upstream_skill(&self, uri: &str) -> Result<Option<SkillEntry>, ErrorData> {
        self.shared.catalog.refresh_approvals().await;
        match self.shared.catalog.skill_of(uri, self.includes()) {
            Some(k) if !k.approved => Err(invalid(format!(
                "skill {} is withheld: its manifest changed since it was approved (`switchyard upstreams approve {} \
                 --skill {}`)",
                k.exposed.uri, k.upstream, k.path
            ))),
            found => Ok(found),
        }
    }

    pub(super) async fn read_skill_directory(
        &self,
        request: ReadResourceDirectoryRequestParams,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<ReadResourceDirectoryResult, ErrorData> {
        let uri = request.uri.clone();
        if let Some(r) = self.local_skills().find_map(|c| c.read_resource_directory(&uri).ok()) {
            return Ok(served::in_era!(r, self.era(ctx).as_ref()));
        }
        let not_a_directory = || invalid(format!("not a directory: {uri}"));
        let Some(k) = self.upstream_skill(&uri).await? else { return Err(not_a_directory()) };
        let original = unscoped(&k.upstream, &uri).ok_or_else(not_a_directory)?;
        let decided = serde_json::json!({ "uri": original, "skill": k.path, "manifest": k.digest });
        self.decide(ctx, &k.upstream, SKILL_READ.into(), decided).await?;
        let mut params = ReadResourceDirectoryRequestParams::new(original);
        params.cursor = request.cursor;
        let request = ClientRequest::ReadResourceDirectoryRequest(ReadResourceDirectoryRequest::new(params));
        let mut r = match self.forward(&k.upstream, request, ctx).await? {
            ServerResult::ListResourcesResult(r) => r,
            _ => return Err(unexpected("resources/directory/read")),
        };
        for child in &mut r.resources {
            child.uri = scoped(&k.upstream, &child.uri).unwrap_or_else(|| child.uri.clone());
        }
        Ok(served::in_era!(r, self.era(ctx).as_ref()))
    }

    /// `resources/read` of a skill file: a local one from memory; an upstream one fetched now and
    /// passed on only if its bytes match the approved manifest. `None`: no skill serves `uri`.
    pub(super) async fn read_skill_file(
        &self,
        uri: &str,
        ctx: &RequestContext<RoleServer>,
    ) -> Option<Result<ReadResourceResponse, ErrorData>> {
        if let Some(r) = self.local_skills().find_map(|c| c.read_resource(uri)) {
            return Some(Ok(served::read(ReadResourceResponse::Complete(r), self.era(ctx).as_ref())));
        }
        let k = match self.upstream_skill(uri).await {
            Ok(Some(k)) => k,
            Ok(None) => return None,
            Err(e) => return Some(Err(e)),
        };
        Some(self.verified_read(&k, uri, ctx).await)
    }

    async fn verified_read(
        &self,
        k: &SkillEntry,
        uri: &str,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let original = unscoped(&k.upstream, uri).ok_or_else(|| invalid(format!("resource not found: {uri}")))?;
        let read = SkillRead { uri: original.clone(), skill: k.path.clone(), manifest: k.digest.clone() };
        let submission = Submission {
            principal: principal(ctx)?,
            upstream: k.upstream.clone(),
            operation: SKILL_READ.into(),
            request: serde_json::to_value(&read).map_err(|e| internal(e.to_string()))?,
            ingress_key: None,
            ingress: switchyard_contract::Ingress::Mcp,
            caller: None,
            context: Some(CallContext::new(self.relay(ctx))),
            grant: None,
            parent: None,
            trace: None,
        };
        let ct = ctx.ct.clone();
        let gone = Box::pin(async move { ct.cancelled().await });
        let waited = self
            .shared
            .engine
            .submit_and_wait(submission, self.shared.call_wait, gone)
            .await
            .map_err(|e| crate::error::rpc_error(&e, None))?;
        let inv = waited.submitted.invocation;
        let mut r: ReadResourceResult = match inv.state {
            InvocationState::Succeeded { result, .. } => {
                serde_json::from_value(result).map_err(|_| unexpected("resources/read"))?
            }
            InvocationState::Failed { error, .. } => {
                let code = error.details.as_ref().and_then(|d| d["code"].as_i64()).and_then(|c| i32::try_from(c).ok());
                let message = format!("{} (invocation {})", error.message, inv.id);
                return Err(ErrorData::new(code.map_or(ErrorCode::INTERNAL_ERROR, ErrorCode), message, None));
            }
            other => {
                return Err(internal(format!(
                    "the read of {uri} is {} (invocation {}); read it again later",
                    other.name().as_str(),
                    inv.id
                )));
            }
        };
        let checked = skills::bytes_of(&r.contents)
            .map_err(skills::Refused::Integrity)
            .and_then(|bytes| skills::verify(&k.skill, &original, &bytes));
        if let Err(refused) = checked {
            warn!(upstream = %k.upstream, skill = %k.path, file = %original, %refused, "skill file refused: not what was reviewed");
            return Err(ErrorData::internal_error(
                format!("skill file refused: {refused} (upstream `{}`); nothing was passed on", k.upstream),
                None,
            ));
        }
        for c in &mut r.contents {
            let (ResourceContents::TextResourceContents { uri: u, .. }
            | ResourceContents::BlobResourceContents { uri: u, .. }) = c
            else {
                continue;
            };
            *u = scoped(&k.upstream, u).unwrap_or_else(|| u.clone());
        }
        Ok(served::read(ReadResourceResponse::Complete(r), self.era(ctx).as_ref()))
    }
}
